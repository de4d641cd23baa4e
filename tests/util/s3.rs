//! A real S3 server on loopback for the object store tests: moto in server mode, started by the
//! test on a free port and killed when dropped, and a small proxy in front of it that injects
//! faults (a burst of 503s, a key gone since its listing, refused credentials).
//!
//! moto is found in the Python of `DUPFIND_TEST_PYTHON`, else of the CI's venv
//! (`target/python-venv`, made by `.ci/python-tests` from tests/python/requirements.txt). Without
//! it the tests say so and pass, unless `DUPFIND_REQUIRE_MOTO` is set (as `.ci/run` sets it).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A fake signature: moto refuses requests without one, and checks none.
const AUTH: &str = "AWS4-HMAC-SHA256 Credential=test/20260101/us-east-1/s3/aws4_request, \
                    SignedHeaders=host, Signature=0";

pub struct S3 {
    child: Child,
    pub port: u16,
}

impl Drop for S3 {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The Python with moto, or None.
pub fn python() -> Option<PathBuf> {
    let candidates = std::env::var_os("DUPFIND_TEST_PYTHON")
        .map(PathBuf::from)
        .into_iter()
        .chain([PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/python-venv/bin/python")]);
    for py in candidates {
        let ok = Command::new(&py)
            .args(["-c", "import moto.server, flask"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if ok {
            return Some(py);
        }
    }
    None
}

/// A port nothing listens on now.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("binding a free port")
}

/// Waits until a server (`what`) listens on `port` of loopback: at most a minute.
pub fn wait_for(port: u16, what: &str) {
    let start = Instant::now();
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "{what} did not start"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Makes a certificate and key for 127.0.0.1 (with the `cryptography` package moto depends on).
const MAKE_CERT: &str = r#"
import datetime, ipaddress, sys
from cryptography import x509
from cryptography.x509.oid import NameOID
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
key = ec.generate_private_key(ec.SECP256R1())
name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
now = datetime.datetime.now(datetime.timezone.utc)
cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
    .public_key(key.public_key()).serial_number(x509.random_serial_number())
    .not_valid_before(now - datetime.timedelta(hours=1))
    .not_valid_after(now + datetime.timedelta(days=1))
    .add_extension(x509.SubjectAlternativeName(
        [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
    .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
    .sign(key, hashes.SHA256()))
open(sys.argv[1], "wb").write(cert.public_bytes(serialization.Encoding.PEM))
open(sys.argv[2], "wb").write(key.private_bytes(serialization.Encoding.PEM,
    serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption()))
"#;

impl S3 {
    /// moto on a free port, or None (with a message) when there is no Python with moto.
    pub fn start() -> Option<S3> {
        Self::start_with(&[])
    }

    /// moto serving HTTPS with a certificate for 127.0.0.1 made in `dir`: the server and the
    /// certificate's path (PEM), or None as [`S3::start`]. [`S3::request`] speaks plain HTTP:
    /// fill this one with [`S3::python_put_dir`].
    pub fn start_tls(dir: &std::path::Path) -> Option<(S3, PathBuf)> {
        let Some(py) = python() else {
            // Says why there is none, or fails when DUPFIND_REQUIRE_MOTO is set.
            Self::start();
            return None;
        };
        std::fs::create_dir_all(dir).unwrap();
        let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
        let made = Command::new(&py)
            .args(["-c", MAKE_CERT])
            .arg(&cert)
            .arg(&key)
            .status()
            .expect("running Python");
        assert!(made.success(), "making a certificate");
        let (cert_arg, key_arg) = (cert.to_str().unwrap(), key.to_str().unwrap());
        let s3 = Self::start_with(&["-s", "-c", cert_arg, "-k", key_arg])?;
        Some((s3, cert))
    }

    /// Creates `bucket` on the HTTPS server `self` (made by [`S3::start_tls`], trusting `cert`)
    /// and puts every file under `dir` below `prefix`, with boto3 (a moto dependency).
    pub fn python_put_dir(
        &self,
        cert: &std::path::Path,
        bucket: &str,
        dir: &std::path::Path,
        prefix: &str,
    ) {
        let script = r#"
import os, sys, boto3
port, cert, bucket, top, prefix = sys.argv[1:]
s3 = boto3.client("s3", endpoint_url=f"https://127.0.0.1:{port}", verify=cert,
    aws_access_key_id="test", aws_secret_access_key="test", region_name="us-east-1")
s3.create_bucket(Bucket=bucket)
for root, _, files in os.walk(top):
    for f in files:
        path = os.path.join(root, f)
        key = prefix + os.path.relpath(path, top).replace(os.sep, "/")
        with open(path, "rb") as body:
            s3.put_object(Bucket=bucket, Key=key, Body=body.read())
"#;
        let status = Command::new(python().expect("moto's Python"))
            .args(["-c", script, &self.port.to_string()])
            .args([
                cert,
                std::path::Path::new(bucket),
                dir,
                std::path::Path::new(prefix),
            ])
            .status()
            .expect("running Python");
        assert!(status.success(), "putting {} into {bucket}", dir.display());
    }

    fn start_with(extra: &[&str]) -> Option<S3> {
        let Some(py) = python() else {
            assert!(
                std::env::var_os("DUPFIND_REQUIRE_MOTO").is_none(),
                "DUPFIND_REQUIRE_MOTO is set and no Python has moto: run .ci/python-tests' venv \
                 setup, or set DUPFIND_TEST_PYTHON"
            );
            eprintln!(
                "skipped: no Python with moto[server] (set DUPFIND_TEST_PYTHON, or make \
                 target/python-venv as .ci/python-tests does)"
            );
            return None;
        };
        let port = free_port();
        let child = Command::new(py)
            .args([
                "-m",
                "moto.server",
                "-H",
                "127.0.0.1",
                "-p",
                &port.to_string(),
            ])
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("starting moto");
        let s3 = S3 { child, port };
        wait_for(port, "moto");
        Some(s3)
    }

    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// One request straight to moto; its status and body.
    pub fn request(&self, method: &str, path: &str, body: &[u8]) -> (u16, Vec<u8>) {
        request(self.port, method, path, body)
    }

    pub fn create_bucket(&self, bucket: &str) {
        let (status, body) = self.request("PUT", &format!("/{bucket}"), b"");
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    }

    pub fn put(&self, bucket_key: &str, body: impl AsRef<[u8]>) {
        let (status, got) = self.request("PUT", &format!("/{bucket_key}"), body.as_ref());
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&got));
    }

    /// An object's bytes, None when there is none.
    pub fn get(&self, bucket_key: &str) -> Option<Vec<u8>> {
        let (status, body) = self.request("GET", &format!("/{bucket_key}"), b"");
        (status == 200).then_some(body)
    }

    /// The keys below `prefix` in `bucket`.
    pub fn keys(&self, bucket: &str, prefix: &str) -> Vec<String> {
        let (status, body) = self.request(
            "GET",
            &format!("/{bucket}?list-type=2&prefix={prefix}"),
            b"",
        );
        assert_eq!(status, 200);
        let xml = String::from_utf8_lossy(&body).into_owned();
        xml.split("<Key>")
            .skip(1)
            .filter_map(|s| s.split("</Key>").next())
            .map(str::to_string)
            .collect()
    }

    /// Deletes an object.
    pub fn delete(&self, bucket_key: &str) {
        let (status, body) = self.request("DELETE", &format!("/{bucket_key}"), b"");
        assert_eq!(status, 204, "{}", String::from_utf8_lossy(&body));
    }

    /// Every file below `dir` put under `bucket/prefix`.
    pub fn put_dir(&self, dir: &std::path::Path, bucket_prefix: &str) {
        for file in super::walk_files(dir) {
            let rel = file.strip_prefix(dir).unwrap().to_str().unwrap();
            self.put(
                &format!("{bucket_prefix}{rel}"),
                std::fs::read(&file).unwrap(),
            );
        }
    }

    /// The environment the AWS CLI reads, pointing at this server (or `endpoint`).
    pub fn env(&self, cmd: &mut Command, endpoint: &str) {
        cmd.env("AWS_ENDPOINT_URL", endpoint)
            .env("AWS_ACCESS_KEY_ID", "test")
            .env("AWS_SECRET_ACCESS_KEY", "test")
            .env("AWS_REGION", "us-east-1")
            .env("DUPFIND_STORE_TIMEOUT", "5")
            .env_remove("AWS_SESSION_TOKEN")
            .env_remove("AWS_PROFILE");
    }
}

fn request(port: u16, method: &str, path: &str, body: &[u8]) -> (u16, Vec<u8>) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connecting to moto");
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: {AUTH}\r\n\
         Content-Type: application/octet-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes()).unwrap();
    s.write_all(body).unwrap();
    let mut resp = Vec::new();
    s.read_to_end(&mut resp).unwrap();
    let split = resp
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a response head");
    let head = String::from_utf8_lossy(&resp[..split]).into_owned();
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("a status");
    let mut body = resp[split + 4..].to_vec();
    if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        body = dechunk(&body);
    }
    (status, body)
}

fn dechunk(mut b: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let Some(eol) = b.windows(2).position(|w| w == b"\r\n") else {
            return out;
        };
        let n = usize::from_str_radix(std::str::from_utf8(&b[..eol]).unwrap().trim(), 16).unwrap();
        if n == 0 {
            return out;
        }
        out.extend_from_slice(&b[eol + 2..eol + 2 + n]);
        b = &b[eol + 2 + n + 2..];
    }
}

/// What the proxy does to the requests it passes on.
#[derive(Default)]
pub struct Faults {
    /// Answer this many requests with 503 Slow Down before passing any on.
    pub busy: AtomicUsize,
    /// GETs of these paths (`/bucket/key`) answer 404 NoSuchKey, as a key deleted since its
    /// listing does.
    pub gone: Mutex<Vec<String>>,
    /// PUTs (and multipart uploads) of these paths (`/bucket/key`) answer 403 AccessDenied, as
    /// a write the store refuses, or a task killed before it, leaves the key as it was.
    pub denied: Mutex<Vec<String>>,
    /// Refuse every request: 403 InvalidAccessKeyId.
    pub refuse: std::sync::atomic::AtomicBool,
    /// Requests seen.
    pub seen: AtomicUsize,
    /// Each request seen, as `METHOD /bucket/key?query`.
    pub log: Mutex<Vec<String>>,
    /// Hold every part of a multipart upload unanswered until its client goes away, as a slow
    /// upload an interrupt comes in the middle of.
    pub hold_parts: std::sync::atomic::AtomicBool,
    /// Parts held so far.
    pub held: AtomicUsize,
}

/// A proxy in front of `upstream` on a free port, each request on a connection of its own.
pub fn proxy(upstream: u16) -> (u16, Arc<Faults>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let faults = Arc::new(Faults::default());
    let f = Arc::clone(&faults);
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            let f = Arc::clone(&f);
            std::thread::spawn(move || {
                let _ = serve(conn, upstream, &f);
            });
        }
    });
    (port, faults)
}

fn serve(conn: TcpStream, upstream: u16, f: &Faults) -> std::io::Result<()> {
    let mut reader = BufReader::new(conn.try_clone()?);
    let mut head = String::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            return Ok(());
        }
        let end = line == "\r\n";
        head.push_str(&line);
        if end {
            break;
        }
    }
    f.seen.fetch_add(1, Ordering::SeqCst);
    let len = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse::<usize>().ok())?
        })
        .unwrap_or(0);
    let mut body = vec![0; len];
    reader.read_exact(&mut body)?;
    let mut conn = conn;
    let (method, path) = {
        let mut parts = head.split(' ');
        (parts.next().unwrap_or(""), parts.next().unwrap_or(""))
    };
    let reply = |conn: &mut TcpStream, status: &str, code: &str| {
        let xml = format!("<?xml version=\"1.0\"?><Error><Code>{code}</Code></Error>");
        let resp = format!(
            "HTTP/1.1 {status}\r\nContent-Type: application/xml\r\nContent-Length: {}\r\n\
             Connection: close\r\n\r\n{xml}",
            xml.len()
        );
        conn.write_all(resp.as_bytes())?;
        conn.shutdown(Shutdown::Both)
    };
    f.log.lock().unwrap().push(format!("{method} {path}"));
    if f.refuse.load(Ordering::SeqCst) {
        return reply(&mut conn, "403 Forbidden", "InvalidAccessKeyId");
    }
    let busy = f
        .busy
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
        .is_ok();
    if busy {
        return reply(&mut conn, "503 Slow Down", "SlowDown");
    }
    let key = path.split('?').next().unwrap_or("");
    let gone = f.gone.lock().unwrap().iter().any(|g| g == key);
    if gone && (method == "GET" || method == "HEAD") {
        return reply(&mut conn, "404 Not Found", "NoSuchKey");
    }
    let denied = f.denied.lock().unwrap().iter().any(|d| d == key);
    if denied && (method == "PUT" || method == "POST") {
        return reply(&mut conn, "403 Forbidden", "AccessDenied");
    }
    if f.hold_parts.load(Ordering::SeqCst) && method == "PUT" && path.contains("partNumber=") {
        f.held.fetch_add(1, Ordering::SeqCst);
        // Until the client closes the connection (it ends).
        let _ = reader.read(&mut [0; 1]);
        return Ok(());
    }
    // Passed on with the connection closed after it, so that the response ends at its EOF.
    let mut up = TcpStream::connect(("127.0.0.1", upstream))?;
    let head: String = head
        .split("\r\n")
        .filter(|l| !l.to_ascii_lowercase().starts_with("connection:") && !l.is_empty())
        .map(|l| format!("{l}\r\n"))
        .collect();
    up.write_all(head.as_bytes())?;
    up.write_all(b"Connection: close\r\n\r\n")?;
    up.write_all(&body)?;
    let mut resp = Vec::new();
    up.read_to_end(&mut resp)?;
    conn.write_all(&resp)?;
    conn.shutdown(Shutdown::Both)
}
