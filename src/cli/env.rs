//! The environment variables that set what a flag would, read as strictly as their flags: a
//! value outside what is accepted is refused before any work, with the variable, the value and
//! what would do, as clap refuses a bad flag. Ignoring it quietly runs with a setting nobody
//! asked for; taking it as is crashed the run (a pool of 20000 threads, a timeout past what a
//! clock can add).

use std::time::Duration;

use anyhow::{bail, Result};

/// The most worker threads: the bound of scan's and a stage's `-j`, and of `RAYON_NUM_THREADS`.
pub const MOST_THREADS: usize = 1024;

/// The longest `DUPFIND_STORE_TIMEOUT`: a day is past any request worth waiting for, and far
/// below what the clocks the retries are timed with can add.
const MOST_TIMEOUT_SECS: f64 = 86_400.0;

/// Refuses a value of the variables below that would not do, before a command starts.
pub fn check() -> Result<()> {
    threads()?;
    store_timeout()?;
    Ok(())
}

/// `RAYON_NUM_THREADS`: the worker threads when `-j` is not given; None when unset, empty or 0,
/// which rayon reads as one per logical CPU.
pub fn threads() -> Result<Option<usize>> {
    let Some(value) = var("RAYON_NUM_THREADS")? else {
        return Ok(None);
    };
    match value.trim().parse::<usize>() {
        Ok(0) => Ok(None),
        Ok(n) if n <= MOST_THREADS => Ok(Some(n)),
        _ => bail!(
            "RAYON_NUM_THREADS={value}: not a number of worker threads: give 1 to \
             {MOST_THREADS} (as -j), or 0 or nothing for one per logical CPU"
        ),
    }
}

/// `DUPFIND_STORE_TIMEOUT`: how long one request to an object store may take, retries included;
/// None when unset or empty.
pub fn store_timeout() -> Result<Option<Duration>> {
    let Some(value) = var("DUPFIND_STORE_TIMEOUT")? else {
        return Ok(None);
    };
    match value.trim().parse::<f64>() {
        Ok(secs) if secs > 0.0 && secs <= MOST_TIMEOUT_SECS => {
            Ok(Some(Duration::from_secs_f64(secs)))
        }
        _ => bail!(
            "DUPFIND_STORE_TIMEOUT={value}: not a timeout: give the seconds one request to an \
             object store may take, retries included, a number above 0 and at most \
             {MOST_TIMEOUT_SECS} (1.5, 60; unset: 60)"
        ),
    }
}

/// The value of `name`; None when unset or empty (as a shell's `NAME= cmd` unsets it).
fn var(name: &str) -> Result<Option<String>> {
    match std::env::var(name) {
        Ok(v) if v.trim().is_empty() => Ok(None),
        Ok(v) => Ok(Some(v)),
        Err(std::env::VarError::NotPresent) => Ok(None),
        Err(std::env::VarError::NotUnicode(v)) => {
            bail!("{name}={}: not valid UTF-8", v.to_string_lossy())
        }
    }
}
