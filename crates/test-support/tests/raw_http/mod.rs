//! A minimal HTTP/1.1 client over `TcpStream`, so tests see exactly what is on the wire,
//! including whether a chunked body ended cleanly.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use serde_json::Value;

/// How long any single read may block before the test fails instead of hanging.
pub const READ_TIMEOUT: Duration = Duration::from_secs(10);

/// A response as read from the socket.
#[derive(Debug)]
pub struct RawResponse {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    /// The body with chunked framing removed.
    pub body: Vec<u8>,
    /// Whether the body ended as its framing says (terminal chunk or full length).
    pub complete: bool,
}

impl RawResponse {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }
}

/// One client connection with its unread bytes.
pub struct RawConnection {
    pub stream: TcpStream,
    buf: Vec<u8>,
    eof: bool,
}

impl RawConnection {
    pub fn connect(addr: SocketAddr) -> Self {
        let stream = TcpStream::connect(addr).expect("connect to mock server");
        stream
            .set_read_timeout(Some(READ_TIMEOUT))
            .expect("set read timeout");
        Self {
            stream,
            buf: Vec::new(),
            eof: false,
        }
    }

    pub fn send(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).expect("write request");
    }

    /// Reads one more batch of bytes into the buffer; `Ok(0)` at end of stream.
    pub fn read_more(&mut self) -> io::Result<usize> {
        let mut chunk = [0u8; 16 * 1024];
        let n = self.stream.read(&mut chunk)?;
        if n == 0 {
            self.eof = true;
        }
        self.buf.extend_from_slice(&chunk[..n]);
        Ok(n)
    }

    /// The bytes received and not yet consumed by `read_response`.
    pub fn buffered(&self) -> &[u8] {
        &self.buf
    }

    /// Reads until one whole response is parsed, or the peer closes or breaks the
    /// connection (then the response is returned with `complete == false`).
    pub fn read_response(&mut self) -> RawResponse {
        loop {
            if let Some((response, used)) = parse(&self.buf, self.eof) {
                self.buf.drain(..used);
                return response;
            }
            match self.read_more() {
                Ok(_) => {}
                // A reset after the peer aborts counts as the end of what we will get.
                Err(err) if err.kind() == io::ErrorKind::ConnectionReset => self.eof = true,
                Err(err) => panic!(
                    "reading response: {err}; got so far: {:?}",
                    String::from_utf8_lossy(&self.buf)
                ),
            }
        }
    }
}

/// A POST request with a JSON body.
pub fn post_request(path: &str, body: &str, keep_alive: bool) -> String {
    let connection = if keep_alive { "keep-alive" } else { "close" };
    format!(
        "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: {connection}\r\n\r\n{body}",
        body.len()
    )
}

/// Sends one POST with `Connection: close` and reads its response.
pub fn post(addr: SocketAddr, path: &str, body: &str) -> RawResponse {
    let mut connection = RawConnection::connect(addr);
    connection.send(post_request(path, body, false).as_bytes());
    connection.read_response()
}

fn find(haystack: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    haystack
        .get(from..)?
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|at| at + from)
}

/// Parses one response from `buf`; `None` when more bytes are needed and may come.
fn parse(buf: &[u8], eof: bool) -> Option<(RawResponse, usize)> {
    let head_end = find(buf, b"\r\n\r\n", 0)?;
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let status = lines.next()?.split(' ').nth(1)?.parse().ok()?;
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let mut response = RawResponse {
        status,
        headers,
        body: Vec::new(),
        complete: false,
    };
    let mut at = head_end + 4;
    if response.header("transfer-encoding") == Some("chunked") {
        while let Some(line_end) = find(buf, b"\r\n", at) {
            let size_text = String::from_utf8_lossy(&buf[at..line_end]).into_owned();
            let size = usize::from_str_radix(size_text.trim(), 16).ok()?;
            let data_start = line_end + 2;
            if buf.len() < data_start + size + 2 {
                break;
            }
            at = data_start + size + 2;
            if size == 0 {
                response.complete = true;
                return Some((response, at));
            }
            response
                .body
                .extend_from_slice(&buf[data_start..data_start + size]);
        }
    } else if let Some(length) = response
        .header("content-length")
        .and_then(|v| v.parse::<usize>().ok())
    {
        if buf.len() >= at + length {
            response.body.extend_from_slice(&buf[at..at + length]);
            response.complete = true;
            return Some((response, at + length));
        }
        response.body.extend_from_slice(&buf[at..]);
        at = buf.len();
    } else {
        response.body.extend_from_slice(&buf[at..]);
        at = buf.len();
        response.complete = eof;
    }
    eof.then_some((response, at))
}

/// The `event:` kinds and `data:` payloads of a Responses API SSE body.
pub fn sse_events(body: &str) -> Vec<(String, Value)> {
    body.split("\n\n")
        .filter(|block| !block.is_empty())
        .map(|block| {
            let mut kind = String::new();
            let mut data = Value::Null;
            for line in block.lines() {
                if let Some(rest) = line.strip_prefix("event: ") {
                    kind = rest.to_owned();
                } else if let Some(rest) = line.strip_prefix("data: ") {
                    data = serde_json::from_str(rest).unwrap_or(Value::String(rest.to_owned()));
                }
            }
            (kind, data)
        })
        .collect()
}
