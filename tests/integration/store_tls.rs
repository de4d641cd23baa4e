//! HTTPS to an object store: rustls with the ring provider that src/store/client.rs installs
//! (reqwest is built without one), and the certificates the environment trusts.

use super::util::s3::S3;
use super::util::{cluster_paths, edit, run_command, text, TestDir};

#[test]
fn a_prefix_over_https_is_scanned_when_its_certificate_is_trusted_and_refused_when_not() {
    let t = TestDir::new();
    let Some((s3, cert)) = S3::start_tls(&t.join("tls")) else {
        return;
    };
    let a = text(9101, 300);
    t.write("corpus/a1.txt", &a)
        .write("corpus/sub/a2.txt", edit(&a, &[40]))
        .write("corpus/b.txt", text(9102, 300));
    s3.python_put_dir(&cert, "bkt", &t.join("corpus"), "corpus/");
    let endpoint = format!("https://127.0.0.1:{}", s3.port);

    let scan = |trust: bool| {
        let mut cmd = t.command(&["scan", "s3://bkt/corpus/"]);
        s3.env(&mut cmd, &endpoint);
        cmd.env_remove("SSL_CERT_DIR");
        if trust {
            cmd.env("SSL_CERT_FILE", &cert);
        } else {
            cmd.env_remove("SSL_CERT_FILE");
        }
        run_command(cmd)
    };
    let trusted = scan(true);
    assert_eq!(trusted.code(), 0, "{}", trusted.stderr);
    assert_eq!(
        cluster_paths(&trusted.json()),
        [["s3://bkt/corpus/a1.txt", "s3://bkt/corpus/sub/a2.txt"]]
    );

    // A certificate nobody trusts: the prefix cannot be read, and the error says so.
    let untrusted = scan(false);
    assert_eq!(untrusted.code(), 2, "{}", untrusted.stderr);
    assert!(
        untrusted.stderr.contains("s3://bkt/corpus/") && untrusted.stderr.contains("certificate"),
        "{}",
        untrusted.stderr
    );
    assert!(
        !untrusted.stderr.contains("panicked"),
        "{}",
        untrusted.stderr
    );
}

#[test]
fn an_unusable_ssl_cert_file_or_dir_is_named_before_any_request() {
    let t = TestDir::new();
    let Some((s3, cert)) = S3::start_tls(&t.join("tls")) else {
        return;
    };
    t.write("corpus/a.txt", text(9103, 100))
        .write("garbage.pem", "not a certificate\n");
    s3.python_put_dir(&cert, "bkt", &t.join("corpus"), "corpus/");
    let endpoint = format!("https://127.0.0.1:{}", s3.port);
    let garbage = t.join("garbage.pem");
    let missing = t.join("missing");
    let cases = [
        ("SSL_CERT_FILE", missing.join("ca.pem"), "cannot read it"),
        ("SSL_CERT_FILE", garbage, "holds no PEM certificate"),
        ("SSL_CERT_DIR", missing, "not a directory that can be read"),
    ];
    for (name, path, why) in cases {
        let mut cmd = t.command(&["scan", "s3://bkt/corpus/"]);
        s3.env(&mut cmd, &endpoint);
        cmd.env_remove("SSL_CERT_FILE")
            .env_remove("SSL_CERT_DIR")
            .env(name, &path);
        let run = run_command(cmd);
        assert_eq!(run.code(), 2, "{}", run.stderr);
        let said = format!("{name}={}: ", path.display());
        assert!(
            run.stderr.contains(&said) && run.stderr.contains(why),
            "{name}: {}",
            run.stderr
        );
        // Said once, and not as the TLS failure every retried request would end with.
        assert_eq!(run.stderr.matches(&said).count(), 1, "{}", run.stderr);
        assert!(!run.stderr.contains("UnknownIssuer"), "{}", run.stderr);
    }
}
