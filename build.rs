//! Links the binary with packed relative relocations (DT_RELR) where the C library loads them.
//!
//! A position-independent executable lists every pointer the loader must move by the load
//! address. The binary holds some 43,000 (vtables, string tables of the crates linked in); as
//! 24-byte RELA entries they are a megabyte read in full at every start, and counted in the peak
//! RSS of every run, a small scan's included. Packed (`-z pack-relative-relocs`) they take 10 KB.
//! glibc loads them from 2.36 on, and refuses to start a binary that has them when older, so
//! they are asked for only on a native glibc build whose glibc is recent enough: a binary built
//! here runs only on a glibc at least as new, as with any symbol version it links against.

use std::process::Command;

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    let var = |name: &str| std::env::var(name).unwrap_or_default();
    let native = var("TARGET") == var("HOST");
    let glibc = var("CARGO_CFG_TARGET_OS") == "linux" && var("CARGO_CFG_TARGET_ENV") == "gnu";
    if native && glibc && glibc_at_least(2, 36) {
        println!("cargo::rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
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
