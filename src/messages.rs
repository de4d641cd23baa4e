//! Messages on stderr: warnings, notes (with `-v` only) and the progress bar. Never stdout, which
//! is for data.
//!
//! File names in messages are escaped, so a name holding a newline or an escape sequence cannot
//! forge lines or drive the terminal, and one holding a bidirectional control cannot make a
//! line read in another order than its bytes.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use indicatif::{
    HumanCount, ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle, TermLike,
};

/// A file that could not be read, for the report's `errors`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputError {
    /// The path as walked.
    pub path: PathBuf,
    /// For a line of a JSON Lines dump: its 1-based number.
    pub line: Option<u64>,
    /// A short reason ("permission denied").
    pub error: String,
}

/// Where diagnostics go, and whether they are wanted.
#[derive(Clone, Debug, Default)]
pub struct Messages {
    /// Suppress warnings, notes and progress (`--quiet`).
    pub quiet: bool,
    /// Print notes too (`--verbose`): what the run chose, not what went wrong.
    pub verbose: bool,
    /// Draw a progress bar.
    pub progress: bool,
}

impl Messages {
    /// `dupfind: warning: …` on stderr, unless quiet.
    pub fn warn(&self, msg: &str) {
        self.line("warning", msg);
    }

    /// Warns about each input error, as `path[:line]: why`.
    pub fn warn_errors(&self, errors: &[InputError]) {
        for e in errors {
            let line = e.line.map(|l| format!(":{l}")).unwrap_or_default();
            self.warn(&format!("{}{line}: {}", display_path(&e.path), e.error));
        }
    }

    /// `dupfind: note: …` on stderr, with `--verbose` only.
    pub fn note(&self, msg: &str) {
        if self.verbose {
            self.line("note", msg);
        }
    }

    /// `dupfind: note: …` on stderr unless quiet, `--verbose` or not: what a run did that its
    /// user must know (an index left unwritten because nothing changed).
    pub fn tell(&self, msg: &str) {
        self.line("note", msg);
    }

    fn line(&self, kind: &str, msg: &str) {
        if !self.quiet {
            // A closed stderr must not abort the scan; there is nowhere left to report it.
            let _ = writeln!(std::io::stderr().lock(), "dupfind: {kind}: {msg}");
        }
    }

    /// A progress bar of `len` `unit` on stderr, hidden unless progress is on.
    pub fn progress(&self, len: u64, what: &'static str, unit: &'static str) -> Progress {
        let mode = if self.quiet || !self.progress {
            None
        } else if std::io::stderr().is_terminal() {
            Some(ProgressMode::Terminal)
        } else {
            Some(ProgressMode::Log)
        };
        let bar = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::hidden());
        let template = format!(
            "{{prefix}} [{{bar:30}}] {{human_pos}}/{{human_len}} {unit}, {{rate}}, ETA {{eta}}"
        );
        if let Ok(style) = ProgressStyle::with_template(&template) {
            let style = style.progress_chars("=> ").with_key(
                "rate",
                move |s: &ProgressState, w: &mut dyn std::fmt::Write| {
                    let _ = write!(w, "{}", rate(s.per_sec(), unit));
                },
            );
            bar.set_style(style);
        }
        bar.set_prefix(what);
        Progress {
            bar,
            mode,
            what,
            unit,
            start: Instant::now(),
            shown: AtomicBool::new(false),
            done: false,
        }
    }
}

/// How much there is to show: a run over sooner than this draws no bar (a handful of files).
const PROGRESS_DELAY: Duration = Duration::from_secs(1);

/// True while a bar may be on the terminal's last line, for the Ctrl-C handler to clear.
static BAR_ON_TERMINAL: AtomicBool = AtomicBool::new(false);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ProgressMode {
    /// Redrawn in place.
    Terminal,
    /// `--progress always` into a pipe or file: a plain line at most once a second, and a last
    /// line with the totals.
    Log,
}

/// A progress bar that appears only once a run has taken a second, so a handful of files draws
/// nothing, and that ends with a line of totals in a log.
#[derive(Debug)]
pub struct Progress {
    bar: ProgressBar,
    mode: Option<ProgressMode>,
    what: &'static str,
    unit: &'static str,
    start: Instant,
    shown: AtomicBool,
    done: bool,
}

impl Progress {
    /// `n` more done.
    pub fn inc(&self, n: u64) {
        // A bar never shown is not counted: indicatif's count takes a lock and reads the clock,
        // 700 instructions a document.
        let Some(mode) = self.mode else { return };
        self.bar.inc(n);
        if !self.shown.load(Ordering::Relaxed)
            && self.start.elapsed() >= PROGRESS_DELAY
            && !self.shown.swap(true, Ordering::Relaxed)
        {
            let target = match mode {
                ProgressMode::Terminal => {
                    BAR_ON_TERMINAL.store(true, Ordering::SeqCst);
                    ProgressDrawTarget::stderr()
                }
                ProgressMode::Log => ProgressDrawTarget::term_like(Box::<LogLines>::default()),
            };
            self.bar.set_draw_target(target);
        }
    }

    /// Ends the bar: cleared from a terminal; in a log, a last line with the totals.
    pub fn finish(mut self) {
        self.end(true);
    }

    fn end(&mut self, complete: bool) {
        if std::mem::replace(&mut self.done, true) {
            return;
        }
        match self.mode {
            Some(ProgressMode::Terminal) => {
                self.bar.finish_and_clear();
                BAR_ON_TERMINAL.store(false, Ordering::SeqCst);
            }
            Some(ProgressMode::Log) if complete => {
                let secs = self.start.elapsed().as_secs_f64();
                let line = totals_line(self.what, self.bar.position(), self.unit, secs);
                let _ = writeln!(std::io::stderr().lock(), "dupfind: progress: {line}");
            }
            _ => {}
        }
    }
}

impl Drop for Progress {
    /// A bar left behind by an error is cleared, with no totals line.
    fn drop(&mut self) {
        self.end(false);
    }
}

/// Clears the progress bar's line on a terminal, for an exit that skips the bar's own ending
/// (Ctrl-C), so the shell's prompt does not land beside a half-drawn bar.
pub fn clear_progress_line() {
    if BAR_ON_TERMINAL.swap(false, Ordering::SeqCst) {
        let _ = write!(std::io::stderr().lock(), "\r\x1b[2K");
    }
}

/// `1,234 files/s`.
fn rate(per_sec: f64, unit: &str) -> String {
    let per_sec = if per_sec.is_finite() {
        per_sec.max(0.0)
    } else {
        0.0
    };
    format!("{} {unit}/s", HumanCount(per_sec.round() as u64))
}

/// The last line of a log: `reading: 10,339 files in 1.2 s (8,616 files/s)`.
fn totals_line(what: &str, done: u64, unit: &str, secs: f64) -> String {
    let per_sec = if secs > 0.0 { done as f64 / secs } else { 0.0 };
    format!(
        "{what}: {} {unit} in {secs:.1} s ({})",
        HumanCount(done),
        rate(per_sec, unit)
    )
}

/// A progress target for a stderr that is not a terminal (`--progress always` into a log): a
/// plain line at most once a second, no cursor movement, no blank clearing lines.
#[derive(Debug, Default)]
struct LogLines {
    last: std::sync::Mutex<Option<std::time::Instant>>,
}

impl TermLike for LogLines {
    fn width(&self) -> u16 {
        80
    }
    fn move_cursor_up(&self, _: usize) -> std::io::Result<()> {
        Ok(())
    }
    fn move_cursor_down(&self, _: usize) -> std::io::Result<()> {
        Ok(())
    }
    fn move_cursor_right(&self, _: usize) -> std::io::Result<()> {
        Ok(())
    }
    fn move_cursor_left(&self, _: usize) -> std::io::Result<()> {
        Ok(())
    }
    fn write_line(&self, s: &str) -> std::io::Result<()> {
        let line = s.trim_end();
        if line.is_empty() {
            return Ok(());
        }
        let now = std::time::Instant::now();
        let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        if last.is_some_and(|t| now.duration_since(t).as_secs_f64() < 1.0) {
            return Ok(());
        }
        *last = Some(now);
        writeln!(std::io::stderr().lock(), "dupfind: progress: {line}")
    }
    fn write_str(&self, s: &str) -> std::io::Result<()> {
        self.write_line(s)
    }
    fn clear_line(&self) -> std::io::Result<()> {
        Ok(())
    }
    fn flush(&self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
}

/// `dupfind: error: …` on stderr, even with `--quiet`: an error the run cannot recover from
/// (an index not updated) is always said.
pub fn error(msg: &str) {
    let _ = writeln!(std::io::stderr().lock(), "dupfind: error: {msg}");
}

/// "1 file", "2 files".
pub fn count(n: u64, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// A size for people: `512 bytes`, `1.2 MiB (1,234,567 bytes)`, in powers of 1024 as
/// `--max-memory` takes them, with the exact count beside.
pub fn bytes_in_words(n: u64) -> String {
    if n < 1024 {
        count(n, "byte")
    } else {
        format!("{} ({} bytes)", crate::budget::human(n), HumanCount(n))
    }
}

/// A path as it can be shown on a terminal: lossy UTF-8 with control characters escaped.
pub fn display_path(path: &Path) -> String {
    escape_controls(&path.to_string_lossy())
}

/// Escapes control characters (`\n`, `\u{1b}`, …), bidirectional controls (`\u{202e}`, …) and
/// backslashes, for text meant for a terminal. JSON output keeps names as they are: there they
/// are data, and serde_json escapes what JSON requires.
pub fn escape_controls(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c.is_control() || c == '\\' {
            out.extend(c.escape_default());
        } else if is_bidi_control(c) {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    out
}

/// The characters of Unicode's `Bidi_Control` property: the marks (ALM, LRM, RLM), embeddings
/// and overrides (LRE … RLO) and isolates (LRI … PDI), which reorder what a terminal shows
/// ("Trojan Source", CVE-2021-42574).
fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// The reason an I/O operation failed, without the "(os error N)" suffix: "permission denied".
pub fn io_reason(e: &std::io::Error) -> String {
    let text = e.to_string();
    let text = match text.find(" (os error") {
        Some(i) => &text[..i],
        None => &text,
    };
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => "unknown error".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_rates_and_totals_read_as_counts_with_units() {
        assert_eq!(rate(8615.6, "files"), "8,616 files/s");
        assert_eq!(rate(f64::INFINITY, "files"), "0 files/s");
        assert_eq!(rate(f64::NAN, "documents"), "0 documents/s");
        assert_eq!(
            totals_line("reading", 10_339, "files", 1.2),
            "reading: 10,339 files in 1.2 s (8,616 files/s)"
        );
        assert_eq!(
            totals_line("verifying", 0, "documents", 0.0),
            "verifying: 0 documents in 0.0 s (0 documents/s)"
        );
    }

    #[test]
    fn escapes_control_characters_in_names() {
        assert_eq!(
            escape_controls("a\nb\x1b[31mc\\d"),
            "a\\nb\\u{1b}[31mc\\\\d"
        );
        assert_eq!(escape_controls("plain é.txt"), "plain é.txt");
    }

    #[test]
    fn escapes_every_bidirectional_control_and_nothing_near_them() {
        let bidi = [
            0x061C, 0x200E, 0x200F, 0x202A, 0x202B, 0x202C, 0x202D, 0x202E, 0x2066, 0x2067, 0x2068,
            0x2069,
        ];
        for code in bidi {
            let c = char::from_u32(code).unwrap_or('?');
            assert_eq!(
                escape_controls(&format!("a{c}b")),
                format!("a\\u{{{code:x}}}b")
            );
        }
        // Neighbours that are not controls: zero-width (non-)joiners, the separators U+2028,
        // U+2029 and the invisible operators after the isolates.
        for c in [
            '\u{200C}', '\u{200D}', '\u{2028}', '\u{2029}', '\u{FEFF}', '\u{206A}',
        ] {
            assert_eq!(escape_controls(&format!("a{c}b")), format!("a{c}b"));
        }
        assert_eq!(escape_controls("x\u{202E}txt.exe"), "x\\u{202e}txt.exe");
    }

    #[test]
    fn io_reasons_are_short() {
        let e = std::io::Error::from_raw_os_error(13);
        assert_eq!(io_reason(&e), "permission denied");
    }
}
