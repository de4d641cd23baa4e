"""The `dupfind` command of the Python package: the CLI's own `main`, run in this process.

Why not the binary itself in the wheel (as ruff and uv ship theirs): maturin builds one cargo
target per wheel, the extension module here, and has no step to build a second one; a build
script running a nested cargo would compile the whole engine twice. The extension already holds
the whole CLI (`dupfind::embed::main`, which `src/main.rs` is too), so the command runs it: the
same parser, messages, stdout and stderr (written by Rust to the same descriptors), exit status,
Ctrl-C (the default action restored below, so a run without the CLI's own handler dies of the
signal as the binary does) and broken pipe (SIGPIPE ignored, as in any Rust program). The cost is
Python's start, tens of milliseconds: this module imports nothing but the extension.
"""

import signal
import sys


def main() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    from dupfind import _native

    sys.exit(_native.main(sys.argv))


if __name__ == "__main__":
    main()
