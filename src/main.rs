//! The `dupfind` binary: parse, run, turn the outcome into an exit status.

use clap::Parser;

fn main() {
    let cli = dupfind::cli::Cli::parse();
    let code = match dupfind::run(cli) {
        Ok(code) => code.code(),
        Err(err) if dupfind::is_broken_pipe(&err) => 0,
        Err(err) => {
            eprintln!("dupfind: {err:#}");
            dupfind::exit::ExitCode::Error.code()
        }
    };
    std::process::exit(code);
}
