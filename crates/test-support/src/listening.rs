//! A server process that listens on a socket (`deputy mcp-server --listen`,
//! `deputy app-server --listen ws://…`): started, its address read from the line it
//! announces on stderr, and killed when dropped.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

/// How long a server may take to announce its address.
const ANNOUNCE_DEADLINE: Duration = Duration::from_secs(30);

/// A listening server process.
#[derive(Debug)]
pub struct ListeningServer {
    child: Child,
    url: String,
    stderr: Arc<Mutex<String>>,
}

impl ListeningServer {
    /// Starts `command` and waits for its `listening on URL` line on stderr.
    pub fn start(mut command: Command) -> Result<Self, String> {
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|err| format!("could not start the server: {err}"))?;
        let stderr = child.stderr.take().ok_or("no stderr pipe")?;
        let collected = Arc::new(Mutex::new(String::new()));
        let (url_tx, url_rx) = mpsc::channel();
        let sink = collected.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if let Some((_, url)) = line.split_once("listening on ") {
                    let _ = url_tx.send(url.trim().to_string());
                }
                let mut all = sink.lock().unwrap_or_else(|p| p.into_inner());
                all.push_str(&line);
                all.push('\n');
            }
        });
        match url_rx.recv_timeout(ANNOUNCE_DEADLINE) {
            Ok(url) => Ok(Self {
                child,
                url,
                stderr: collected,
            }),
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                let said = collected.lock().unwrap_or_else(|p| p.into_inner()).clone();
                Err(format!(
                    "the server announced no address within {ANNOUNCE_DEADLINE:?}; stderr:\n{said}"
                ))
            }
        }
    }

    /// The URL it announced (`http://127.0.0.1:PORT/mcp`, `ws://127.0.0.1:PORT`).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// `host:port` of [`ListeningServer::url`].
    pub fn authority(&self) -> &str {
        let rest = self
            .url
            .split_once("://")
            .map_or(&*self.url, |(_, rest)| rest);
        rest.split('/').next().unwrap_or(rest)
    }

    /// What the server wrote on stderr so far.
    pub fn stderr(&self) -> String {
        self.stderr
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Whether the process is still running.
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }
}

impl Drop for ListeningServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
