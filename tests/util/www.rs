//! A plain web server on loopback for the http(s) input tests: python's `http.server`, started by
//! the test on a free port and killed when dropped. It answers a request with `Range` as one
//! without (a 200 and the whole body, as HTTP allows), as many static servers do, and knows no
//! WebDAV: a PROPFIND is a 501.

use std::path::Path;
use std::process::{Child, Command, Stdio};

use super::s3::{free_port, python, wait_for};

pub struct Www {
    child: Child,
    pub port: u16,
}

impl Drop for Www {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Www {
    /// The files under `dir`, served at `http://127.0.0.1:PORT/`; `python3` when moto's Python
    /// is not there (the server is in Python's standard library).
    pub fn start(dir: &Path) -> Www {
        let py = python().unwrap_or_else(|| "python3".into());
        let port = free_port();
        let child = Command::new(py)
            .args(["-m", "http.server", "--bind", "127.0.0.1", "--directory"])
            .arg(dir)
            .arg(port.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("starting python's http.server");
        let www = Www { child, port };
        wait_for(port, "http.server");
        www
    }

    /// The URL of `path` on this server.
    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}/{path}", self.port)
    }
}
