//! The `dupfind` binary: parse, run, turn the outcome into an exit status.

fn main() {
    // What glibc keeps of freed memory, fitted to --max-memory once it is known.
    dupfind::tune_allocator();
    let cli = dupfind::cli::parse();
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
