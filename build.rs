//! Links the binary with packed relative relocations (DT_RELR) where the C library loads them,
//! and with the functions a scan runs placed together where the linker can be told their order.
//!
//! A position-independent executable lists every pointer the loader must move by the load
//! address. The binary holds some 43,000 (vtables, string tables of the crates linked in); as
//! 24-byte RELA entries they are a megabyte read in full at every start, and counted in the peak
//! RSS of every run, a small scan's included. Packed (`-z pack-relative-relocs`) they take 10 KB.
//! glibc loads them from 2.36 on, and refuses to start a binary that has them when older, so
//! they are asked for only on a native glibc build whose glibc is recent enough: a binary built
//! here runs only on a glibc at least as new, as with any symbol version it links against.
//!
//! The kernel maps a binary's code 64 KiB around each page a run touches. The thousand or so
//! functions a scan runs are spread by the linker over the whole 19 MB of code (object store
//! clients, Parquet, clap among them), so a small scan mapped some 7 MB of code in 121 such
//! windows, more than before the object stores were linked in. `link-order.txt` lists them (by
//! `benches/link-order.sh`, from callgrind runs of scans), hottest first, and LLD's
//! `--symbol-ordering-file` puts them at the start of the code: some 20 windows, 5 MB less peak
//! RSS on the 10k benchmark corpus (docs/performance.md). Names the binary does not hold (thin
//! LTO's `.llvm.N` suffixes follow the code; another compiler or dependency version changes the
//! hashes) are skipped silently, which only loses their effect; a linker that does not know the
//! option (GNU ld) is not given it, as a probe link tells.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    let var = |name: &str| std::env::var(name).unwrap_or_default();
    let native = var("TARGET") == var("HOST");
    let glibc = var("CARGO_CFG_TARGET_OS") == "linux" && var("CARGO_CFG_TARGET_ENV") == "gnu";
    if native && glibc && glibc_at_least(2, 36) {
        println!("cargo::rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
    println!("cargo::rerun-if-changed=link-order.txt");
    println!("cargo::rerun-if-env-changed=RUSTC_LINKER");
    let order = Path::new(&var("CARGO_MANIFEST_DIR")).join("link-order.txt");
    if var("CARGO_CFG_TARGET_OS") == "linux" && order.is_file() {
        let args = [
            format!("-Wl,--symbol-ordering-file={}", order.display()),
            "-Wl,--no-warn-symbol-ordering".to_string(),
        ];
        if links_with(&args) {
            for arg in args {
                println!("cargo::rustc-link-arg-bins={arg}");
            }
        }
    }
}

/// Whether a program links with `args` given to the linker, with the compiler, target, linker
/// and flags this build uses.
fn links_with(args: &[String]) -> bool {
    let var = |name: &str| std::env::var(name).unwrap_or_default();
    let dir = PathBuf::from(var("OUT_DIR"));
    let src = dir.join("link-probe.rs");
    if std::fs::write(&src, "fn main() {}\n").is_err() {
        return false;
    }
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let mut cmd = Command::new(rustc);
    cmd.arg("--target")
        .arg(var("TARGET"))
        .arg("-o")
        .arg(dir.join("link-probe"))
        .arg(&src);
    let linker = var("RUSTC_LINKER");
    if !linker.is_empty() {
        cmd.arg(format!("-Clinker={linker}"));
    }
    let flags = var("CARGO_ENCODED_RUSTFLAGS");
    cmd.args(flags.split('\x1f').filter(|f| !f.is_empty()));
    for arg in args {
        cmd.arg(format!("-Clink-arg={arg}"));
    }
    cmd.stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Whether the host's glibc (`getconf GNU_LIBC_VERSION`: "glibc 2.36") is `major.minor` or
/// newer; false when it cannot be told.
fn glibc_at_least(major: u32, minor: u32) -> bool {
    let Ok(out) = Command::new("getconf").arg("GNU_LIBC_VERSION").output() else {
        return false;
    };
    let text = String::from_utf8_lossy(&out.stdout);
    let Some(version) = text.trim().strip_prefix("glibc ") else {
        return false;
    };
    let mut parts = version.split('.').map(|p| p.parse::<u32>().ok());
    match (parts.next().flatten(), parts.next().flatten()) {
        (Some(a), Some(b)) => (a, b) >= (major, minor),
        _ => false,
    }
}
