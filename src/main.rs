//! The `dupfind` binary: parse, run, turn the outcome into an exit status
//! ([`dupfind::embed::main`], which the Python package's `dupfind` command runs too).

fn main() {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    std::process::exit(dupfind::embed::main(&args));
}
