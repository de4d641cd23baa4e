//! Exit codes, in one place (documented in the README).

/// How a run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExitCode {
    /// The scan completed and every input was read.
    Success,
    /// `--exit-code` and duplicates were found.
    DuplicatesFound,
    /// Usage error, fatal error, or some input (a root too) could not be read (the report is
    /// still printed).
    Error,
    /// Interrupted by Ctrl-C.
    Interrupted,
}

impl ExitCode {
    /// The process exit status.
    pub fn code(self) -> i32 {
        match self {
            ExitCode::Success => 0,
            ExitCode::DuplicatesFound => 1,
            ExitCode::Error => 2,
            ExitCode::Interrupted => 130,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_the_documented_ones() {
        assert_eq!(ExitCode::Success.code(), 0);
        assert_eq!(ExitCode::DuplicatesFound.code(), 1);
        assert_eq!(ExitCode::Error.code(), 2);
        assert_eq!(ExitCode::Interrupted.code(), 130);
    }
}
