//! The text `--help` and the man pages share: the exit codes, the environment variables read,
//! the examples and the notes, each held once as a table so that `scan --help`
//! ([`scan_after_help`]) and `dupfind man` (`super::man`) cannot disagree.

/// Exit statuses and what each means (docs: README.md's "Exit status").
pub const EXIT_STATUS: &[(&str, &str)] = &[
    (
        "0",
        "The scan completed and every input was read, whether duplicates were found or not \
         (unless --exit-code).",
    ),
    (
        "1",
        "With --exit-code: the scan completed, every input was read, and duplicates were found.",
    ),
    (
        "2",
        "A usage error, a fatal error, or some input could not be read, a root that is missing \
         or a FIFO or device included (the report is still printed, and with -q one line on \
         stderr says how many inputs failed).",
    ),
    (
        "130",
        "Interrupted (Ctrl-C): the output is empty or a complete report; an -o FILE is left as \
         it was.",
    ),
];

/// Environment variables dupfind reads.
pub const ENVIRONMENT: &[(&str, &str)] = &[
    (
        "NO_COLOR",
        "When set, --color auto prints no colour (https://no-color.org).",
    ),
    (
        "RAYON_NUM_THREADS",
        "Worker threads when -j is not given: 1 to 1024, as -j, or 0 for one per logical CPU \
         (the default); another value is refused, with -j or without.",
    ),
    (
        "TMPDIR",
        "Where the texts of JSON Lines records that verification reads again are spilled, in a \
         file deleted as it is made (default: /tmp).",
    ),
    (
        "COLUMNS",
        "The width --help wraps to when it is not a terminal's.",
    ),
    (
        "AWS_ACCESS_KEY_ID",
        "With AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN: the credentials of s3:// URLs \
         (without them, those of the profile in ~/.aws/credentials, then the instance's or \
         container's role).",
    ),
    ("AWS_SECRET_ACCESS_KEY", "See AWS_ACCESS_KEY_ID."),
    ("AWS_SESSION_TOKEN", "See AWS_ACCESS_KEY_ID."),
    (
        "AWS_REGION",
        "The region of s3:// URLs (else AWS_DEFAULT_REGION, else the profile's, else \
         us-east-1).",
    ),
    ("AWS_DEFAULT_REGION", "See AWS_REGION."),
    (
        "AWS_PROFILE",
        "The profile of ~/.aws/credentials and ~/.aws/config read for s3:// URLs when the \
         environment has no keys (else AWS_DEFAULT_PROFILE, else default): its keys, region and \
         endpoint_url.",
    ),
    ("AWS_DEFAULT_PROFILE", "See AWS_PROFILE."),
    (
        "AWS_SHARED_CREDENTIALS_FILE",
        "The credentials file in place of ~/.aws/credentials.",
    ),
    (
        "AWS_CONFIG_FILE",
        "The config file in place of ~/.aws/config.",
    ),
    (
        "HOME",
        "Where ~/.aws/credentials and ~/.aws/config are looked for.",
    ),
    (
        "AWS_ENDPOINT_URL",
        "Another S3-compatible server for s3:// URLs (AWS_ENDPOINT_URL_S3 first); plain http is \
         allowed when named here.",
    ),
    ("AWS_ENDPOINT_URL_S3", "See AWS_ENDPOINT_URL."),
    (
        "GOOGLE_APPLICATION_CREDENTIALS",
        "A service account's JSON key, for gs:// URLs.",
    ),
    (
        "AZURE_STORAGE_ACCOUNT_NAME",
        "With AZURE_STORAGE_ACCOUNT_KEY: the account and key of az://, abfs:// and abfss:// URLs.",
    ),
    (
        "AZURE_STORAGE_ACCOUNT_KEY",
        "See AZURE_STORAGE_ACCOUNT_NAME.",
    ),
    (
        "AZURE_STORAGE_ENDPOINT",
        "Another Azure-compatible server (Azurite); plain http is allowed when named here.",
    ),
    (
        "SSL_CERT_FILE",
        "A PEM file of the certificates https connections trust, in place of the system's; one \
         that cannot be read or holds none is an error.",
    ),
    (
        "SSL_CERT_DIR",
        "Directories of certificates https connections trust (separated by :); one that is not \
         a directory is an error.",
    ),
    (
        "DUPFIND_STORE_TIMEOUT",
        "Seconds one request to an object store may take, retries included: above 0, at most \
         86400 (default: 60); another value is refused.",
    ),
    (
        "DUPFIND_STORE_STATS",
        "When set, a scan ends with the object store requests made and bytes fetched, on stderr.",
    ),
];

/// Examples of `dupfind scan`: the command and what it does.
pub const SCAN_EXAMPLES: &[(&str, &str)] = &[
    (
        "dupfind scan ./corpus",
        "Scan a directory: blocks of text on a terminal, JSON in a pipe or file.",
    ),
    (
        "dupfind scan -q --format paths -0 ./corpus | xargs -0 rm --",
        "Remove every duplicate verified against a copy that is kept (exact bytes, any name).",
    ),
    (
        "dupfind scan -o report.json ./corpus",
        "Write the report to a file, atomically; the file itself is never scanned.",
    ),
    (
        "dupfind scan --keep newest --cluster components --format text ./corpus",
        "Keep the newest copy, and show whole groups of chained near-copies.",
    ),
    (
        "dupfind scan -t 0.9 --shingle char -n 5 docs/",
        "Stricter, on character 5-grams.",
    ),
    (
        "dupfind scan --method simhash --max-distance 3 --format jsonl .",
        "SimHash fingerprints, one JSON record per line.",
    ),
    (
        "dupfind scan --text-field body.text --id-field meta.url crawl.jsonl.zst",
        "A JSON Lines dump, one document per line.",
    ),
    (
        "find . -name '*.md' -print0 | dupfind scan --files-from - -0",
        "Scan the files another tool lists.",
    ),
    (
        "dupfind scan -q --exit-code ./incoming > report.json || alert",
        "In cron: status 1 when duplicates were found, 2 when something could not be read.",
    ),
];

/// Examples of the other commands, for the overview page.
pub const OTHER_EXAMPLES: &[(&str, &str)] = &[
    (
        "dupfind index build --index ~/dedup-index /data/archive",
        "Index a collection once ...",
    ),
    (
        "dupfind scan --against ~/dedup-index --update /data/incoming",
        "... then compare each new batch with it, and add the batch.",
    ),
    (
        "dupfind remove --dry-run report.json",
        "What removing a saved report's duplicates would do, each checked unchanged since the \
         scan; then without --dry-run (or `move --to DIR`, `link`).",
    ),
    (
        "dupfind explain -t 0.85",
        "What a threshold finds: the S-curve of its banding.",
    ),
    ("dupfind man scan > dupfind-scan.1", "This page for scan."),
];

/// What `scan --help` says after the options, beyond the tables.
pub const SCAN_NOTES: &[(&str, &str)] = &[
    (
        "Output",
        "Without --format, a terminal gets text and a pipe or file gets json. The report goes to \
         standard output (or -o FILE); warnings, and notes with -v, go to standard error. \
         --format paths lists every name of each cluster's duplicates (each verified against the \
         copy that is kept), never a kept copy or a linked member; records of JSON Lines dumps \
         and indexed documents are left out.",
    ),
    (
        "Normalization",
        "Text is lowercased (full Unicode), split into tokens at Unicode white space and \
         re-joined by single spaces; shingles are N consecutive tokens (word) or characters \
         (char).",
    ),
    (
        "Inputs",
        "gzip, zstd, bzip2, xz, lzma and lz4 files are recognised by their magic bytes and \
         decompressed (Unix compress, lzip and lzop are recognised and refused); sizes \
         (--max-size, `bytes`) are of the decompressed content, and \"exact\" means identical \
         content after decompression. A JSON Lines dump (--jsonl, or a name ending in .jsonl or \
         .ndjson, optionally .gz/.zst/.bz2/.xz/.lz4) is one document per line; a member from a dump is \
         reported with its \"line\" and \"id\". --max-size limits each document (each line of a \
         dump), not a dump.",
    ),
];

/// `scan --help`'s closing text: the notes, the exit status, the environment and the examples.
pub fn scan_after_help() -> String {
    let mut s = String::new();
    for (title, text) in SCAN_NOTES {
        s.push_str(&format!("{title}: {text}\n\n"));
    }
    s.push_str("Exit status:\n");
    for (code, meaning) in EXIT_STATUS {
        s.push_str(&format!("  {code:<5}{meaning}\n"));
    }
    s.push_str("\nEnvironment:\n");
    for (name, meaning) in ENVIRONMENT {
        s.push_str(&format!("  {name}: {meaning}\n"));
    }
    s.push_str("\nExamples:\n");
    for (command, what) in SCAN_EXAMPLES {
        s.push_str(&format!("  {command}\n      {what}\n"));
    }
    s.pop();
    s
}
