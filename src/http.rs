//! The one HTTP/1.1 client, over `std::net`, for every command that talks to a server
//! (`measure`, `measure --replica`, `capacity --server`): one fresh connection per request
//! (so TTFT starts after the connection is up), `Connection: close`, a deadline on every
//! socket operation so a stuck or dripping server can never hang a run, and caps on what a
//! response may make us buffer.
//!
//! Plain `http://` only: these commands talk to a serving engine on the local network.

use crate::error::{Error, Result};
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

/// Hard caps: a hostile or broken server cannot make us buffer without bound.
pub const MAX_HEADER_BYTES: usize = 64 * 1024;
pub const MAX_BODY_BYTES: usize = 16 * 1024 * 1024;

pub type Headers = Vec<(String, String)>;

/// A whole (small) response.
pub struct Fetched {
    pub status: u16,
    pub headers: Headers,
    pub body: Vec<u8>,
}

impl Fetched {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// The server's base URL, split for connecting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    host: String,
    port: u16,
    /// Path prefix before `/v1/...`, without a trailing slash (often empty).
    prefix: String,
}

impl Endpoint {
    pub fn parse(url: &str) -> Result<Self> {
        let bad = |why: &str| {
            Error::input_with_help(
                format!("--server {url}: {why}"),
                "pass the server's base URL, e.g. --server http://127.0.0.1:8000",
            )
        };
        if url.starts_with("https://") {
            return Err(bad(
                "https is not supported; use the server's plain http port on your network",
            ));
        }
        let rest = url
            .strip_prefix("http://")
            .ok_or_else(|| bad("not an http:// URL"))?;
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, ""),
        };
        let (host, port) = match authority.rsplit_once(':') {
            Some((host, port)) if !host.ends_with(']') || authority.starts_with('[') => {
                let port = port
                    .parse::<u16>()
                    .map_err(|_| bad("the port is not a number"))?;
                (host, port)
            }
            _ => (authority, 80),
        };
        let host = host.trim_start_matches('[').trim_end_matches(']');
        if host.is_empty() {
            return Err(bad("no host"));
        }
        let mut prefix = path.trim_end_matches('/').to_owned();
        // Accept a URL that already names the API root.
        if prefix.ends_with("/v1") {
            prefix.truncate(prefix.len() - 3);
        }
        Ok(Endpoint {
            host: host.to_owned(),
            port,
            prefix,
        })
    }

    /// The base URL, normalized, as reports show it.
    pub fn base(&self) -> String {
        format!("http://{}{}", self.authority(), self.prefix)
    }

    /// `host:port` as the `Host` header writes it (an IPv6 address in brackets).
    fn authority(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base())
    }
}

#[derive(Debug, Clone, Copy)]
pub struct Timeouts {
    pub connect: Duration,
    /// The whole request: first byte and the full stream must arrive within it.
    pub request: Duration,
}

/// A response whose headers are read; its body is read on demand.
pub struct Response {
    pub status: u16,
    pub reason: String,
    headers: Headers,
    reader: BufReader<DeadlineStream>,
    body: BodyState,
    body_bytes: usize,
    url: String,
    request_timeout: Duration,
}

enum BodyState {
    Length(usize),
    Chunked { left_in_chunk: usize, done: bool },
    UntilClose,
}

/// A TCP stream whose every read waits at most until the request's deadline.
struct DeadlineStream {
    stream: TcpStream,
    deadline: Instant,
}

impl Read for DeadlineStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::ErrorKind::TimedOut.into());
        }
        self.stream
            .set_read_timeout(Some(left.max(Duration::from_millis(1))))?;
        self.stream.read(buf)
    }
}

/// Sends one request and reads the response head. `sent_at` is taken just before the
/// request bytes are written, after the connection is established.
pub fn send(
    endpoint: &Endpoint,
    method: &str,
    path: &str,
    body: Option<&[u8]>,
    timeouts: Timeouts,
) -> Result<(Response, Instant)> {
    send_with_headers(endpoint, method, path, body, &[], timeouts)
}

/// [`send`] with extra request headers (a router's session-affinity header).
pub fn send_with_headers(
    endpoint: &Endpoint,
    method: &str,
    path: &str,
    body: Option<&[u8]>,
    extra_headers: &[(String, String)],
    timeouts: Timeouts,
) -> Result<(Response, Instant)> {
    let url = endpoint.url(path);
    let stream = connect(endpoint, &url, timeouts.connect)?;
    exchange(
        endpoint,
        stream,
        method,
        path,
        body,
        extra_headers,
        timeouts,
    )
}

/// Writes the request on a connected stream and reads the response head.
fn exchange(
    endpoint: &Endpoint,
    stream: TcpStream,
    method: &str,
    path: &str,
    body: Option<&[u8]>,
    extra_headers: &[(String, String)],
    timeouts: Timeouts,
) -> Result<(Response, Instant)> {
    let url = endpoint.url(path);
    let mut request = format!(
        "{method} {}{path} HTTP/1.1\r\nHost: {}\r\nUser-Agent: prefixlint/{}\r\nAccept: text/event-stream, application/json, text/plain\r\nConnection: close\r\n",
        endpoint.prefix,
        endpoint.authority(),
        env!("CARGO_PKG_VERSION"),
    )
    .into_bytes();
    // A POST always states its length, or the server waits for a body.
    let body = body.or((method == "POST").then_some(&b""[..]));
    if let Some(body) = body {
        request.extend_from_slice(
            format!(
                "Content-Type: application/json\r\nContent-Length: {}\r\n",
                body.len()
            )
            .as_bytes(),
        );
    }
    for (name, value) in extra_headers {
        request.extend_from_slice(format!("{name}: {value}\r\n").as_bytes());
    }
    request.extend_from_slice(b"\r\n");
    if let Some(body) = body {
        request.extend_from_slice(body);
    }
    let _ = stream.set_nodelay(true);
    let sent_at = Instant::now();
    let deadline = sent_at + timeouts.request;
    stream
        .set_write_timeout(Some(timeouts.request))
        .and_then(|_| (&stream).write_all(&request))
        .map_err(|e| io_error(&url, "sending the request", e, timeouts.request))?;
    let mut reader = BufReader::with_capacity(16 * 1024, DeadlineStream { stream, deadline });
    let head = read_head(&mut reader)
        .map_err(|e| io_error(&url, "waiting for the first byte", e, timeouts.request))?;
    let (status, reason, headers) = parse_head(&head).ok_or_else(|| {
        Error::input(format!(
            "{url}: the answer is not HTTP: {}",
            snippet(head.join("\n").as_bytes())
        ))
    })?;
    let header = |name: &str| {
        headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    };
    let body = if header("transfer-encoding")
        .is_some_and(|v| v.to_ascii_lowercase().contains("chunked"))
    {
        BodyState::Chunked {
            left_in_chunk: 0,
            done: false,
        }
    } else if let Some(length) = header("content-length") {
        let length = length
            .trim()
            .parse::<usize>()
            .map_err(|_| Error::input(format!("{url}: bad Content-Length `{length}`")))?;
        if length > MAX_BODY_BYTES {
            return Err(too_large(&url));
        }
        BodyState::Length(length)
    } else {
        BodyState::UntilClose
    };
    Ok((
        Response {
            status,
            reason,
            headers,
            reader,
            body,
            body_bytes: 0,
            url,
            request_timeout: timeouts.request,
        },
        sent_at,
    ))
}

impl Response {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn url(&self) -> &str {
        &self.url
    }

    /// Reads the next piece of the body; 0 at its end. A body cut short is an error.
    pub fn read_body(&mut self, buf: &mut [u8]) -> Result<usize> {
        let n = self
            .read_body_io(buf)
            .map_err(|e| io_error(&self.url, "reading the response", e, self.request_timeout))?;
        self.body_bytes += n;
        if self.body_bytes > MAX_BODY_BYTES {
            return Err(too_large(&self.url));
        }
        Ok(n)
    }

    /// The rest of the body, up to `limit` bytes (more is an error).
    pub fn read_to_end(&mut self, limit: usize) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        let mut buf = [0u8; 8192];
        loop {
            let n = self.read_body(&mut buf)?;
            if n == 0 {
                return Ok(out);
            }
            out.extend_from_slice(&buf[..n]);
            if out.len() > limit {
                return Err(too_large(&self.url));
            }
        }
    }

    /// Up to `limit` bytes of the body, for an error message; never fails.
    pub fn body_snippet(&mut self, limit: usize) -> String {
        let mut out = Vec::new();
        let mut buf = [0u8; 1024];
        while out.len() < limit {
            match self.read_body(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => out.extend_from_slice(&buf[..n]),
            }
        }
        snippet(&out)
    }

    fn read_body_io(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match &mut self.body {
            BodyState::Length(0) => Ok(0),
            BodyState::Length(left) => {
                let want = buf.len().min(*left);
                let n = self.reader.read(&mut buf[..want])?;
                if n == 0 {
                    return Err(io::ErrorKind::UnexpectedEof.into());
                }
                *left -= n;
                Ok(n)
            }
            BodyState::UntilClose => self.reader.read(buf),
            BodyState::Chunked {
                left_in_chunk,
                done,
            } => {
                if *done {
                    return Ok(0);
                }
                if *left_in_chunk == 0 {
                    let line = read_line(&mut self.reader)?;
                    let size = line.split(';').next().unwrap_or("").trim();
                    let size = usize::from_str_radix(size, 16).map_err(|_| {
                        io::Error::new(io::ErrorKind::InvalidData, "bad chunk size")
                    })?;
                    if size == 0 {
                        // Trailers, then the blank line that ends the message.
                        while !read_line(&mut self.reader)?.is_empty() {}
                        *done = true;
                        return Ok(0);
                    }
                    *left_in_chunk = size;
                }
                let want = buf.len().min(*left_in_chunk);
                let n = self.reader.read(&mut buf[..want])?;
                if n == 0 {
                    return Err(io::ErrorKind::UnexpectedEof.into());
                }
                *left_in_chunk -= n;
                if *left_in_chunk == 0 {
                    read_line(&mut self.reader)?; // the CRLF after the chunk data
                }
                Ok(n)
            }
        }
    }
}

/// GET or POST with a JSON body; returns status and the (capped) body.
pub fn fetch(
    endpoint: &Endpoint,
    method: &str,
    path: &str,
    body: Option<&[u8]>,
    timeouts: Timeouts,
    limit: usize,
) -> Result<Fetched> {
    try_fetch(endpoint, method, path, body, timeouts, limit).map_err(Failure::into_error)
}

/// Why a [`try_fetch`] failed: nothing answered at the address, so asking another path of
/// the same server is pointless; or the exchange itself went wrong.
pub enum Failure {
    Unreachable(Error),
    Exchange(Error),
}

impl Failure {
    pub fn into_error(self) -> Error {
        match self {
            Failure::Unreachable(e) | Failure::Exchange(e) => e,
        }
    }
}

/// [`fetch`] that tells a server that cannot be reached from one that answered badly.
pub fn try_fetch(
    endpoint: &Endpoint,
    method: &str,
    path: &str,
    body: Option<&[u8]>,
    timeouts: Timeouts,
    limit: usize,
) -> std::result::Result<Fetched, Failure> {
    let url = endpoint.url(path);
    let stream = connect(endpoint, &url, timeouts.connect).map_err(Failure::Unreachable)?;
    let (mut response, _) =
        exchange(endpoint, stream, method, path, body, &[], timeouts).map_err(Failure::Exchange)?;
    let body = response.read_to_end(limit).map_err(Failure::Exchange)?;
    Ok(Fetched {
        status: response.status,
        headers: std::mem::take(&mut response.headers),
        body,
    })
}

fn connect(endpoint: &Endpoint, url: &str, timeout: Duration) -> Result<TcpStream> {
    let addrs = resolve(&endpoint.host, endpoint.port, timeout).map_err(|e| {
        Error::input_with_help(
            format!("{url}: cannot resolve host `{}`: {e}", endpoint.host),
            "check the host name in --server",
        )
    })?;
    let mut last = None;
    for addr in addrs {
        match TcpStream::connect_timeout(&addr, timeout) {
            Ok(stream) => return Ok(stream),
            Err(e) => last = Some(e),
        }
    }
    let e = last.unwrap_or_else(|| io::Error::new(io::ErrorKind::NotFound, "no address"));
    Err(match e.kind() {
        io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock => Error::input_with_help(
            format!("{url}: connecting timed out after {}", secs(timeout)),
            "is the server reachable? raise --connect-timeout for a slow network",
        ),
        _ => Error::input_with_help(
            format!("{url}: cannot connect: {e}"),
            "is the server running and listening on that address? check --server",
        ),
    })
}

/// Name resolution can block for long in the C library: it runs on a thread we stop waiting for.
fn resolve(host: &str, port: u16, timeout: Duration) -> io::Result<Vec<SocketAddr>> {
    if let Ok(ip) = host.parse::<IpAddr>() {
        return Ok(vec![SocketAddr::new(ip, port)]);
    }
    let (tx, rx) = std::sync::mpsc::channel();
    let target = format!("{host}:{port}");
    std::thread::spawn(move || {
        let _ = tx.send(target.to_socket_addrs().map(|a| a.collect::<Vec<_>>()));
    });
    match rx.recv_timeout(timeout) {
        Ok(Ok(addrs)) if !addrs.is_empty() => Ok(addrs),
        Ok(Ok(_)) => Err(io::Error::new(io::ErrorKind::NotFound, "no addresses")),
        Ok(Err(e)) => Err(e),
        Err(_) => Err(io::Error::new(
            io::ErrorKind::TimedOut,
            format!("no answer within {}", secs(timeout)),
        )),
    }
}

/// The status line and header lines, up to the blank line; the body stays buffered.
fn read_head(reader: &mut BufReader<DeadlineStream>) -> io::Result<Vec<String>> {
    let mut lines = Vec::new();
    let mut total = 0;
    loop {
        let line = read_line(reader).map_err(|e| match e.kind() {
            io::ErrorKind::UnexpectedEof if lines.is_empty() => io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the server closed the connection without answering",
            ),
            _ => e,
        })?;
        if line.is_empty() {
            return Ok(lines);
        }
        total += line.len();
        if total > MAX_HEADER_BYTES {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "response headers are larger than 64 KiB",
            ));
        }
        lines.push(line);
    }
}

fn parse_head(head: &[String]) -> Option<(u16, String, Headers)> {
    let mut lines = head.iter();
    let status_line = lines.next()?;
    let mut parts = status_line.splitn(3, ' ');
    let version = parts.next()?;
    if !version.starts_with("HTTP/1.") {
        return None;
    }
    let status = parts.next()?.parse::<u16>().ok()?;
    let reason = parts.next().unwrap_or("").to_owned();
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        .collect();
    Some((status, reason, headers))
}

fn read_line(reader: &mut BufReader<DeadlineStream>) -> io::Result<String> {
    let mut line = Vec::new();
    loop {
        let available = reader.fill_buf()?;
        if available.is_empty() {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        if let Some(i) = available.iter().position(|&b| b == b'\n') {
            line.extend_from_slice(&available[..i]);
            reader.consume(i + 1);
            break;
        }
        let n = available.len();
        line.extend_from_slice(available);
        reader.consume(n);
        if line.len() > 8192 {
            return Err(io::Error::new(io::ErrorKind::InvalidData, "line too long"));
        }
    }
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    String::from_utf8(line).map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "not UTF-8"))
}

fn io_error(url: &str, doing: &str, e: io::Error, timeout: Duration) -> Error {
    match e.kind() {
        io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock => Error::input_with_help(
            format!(
                "{url}: timed out {doing}: the request did not complete within {}",
                secs(timeout)
            ),
            "the server is stuck, overloaded or streaming too slowly; raise --timeout if it is just slow",
        ),
        io::ErrorKind::UnexpectedEof => Error::input_with_help(
            format!("{url}: the connection closed early while {doing} (response truncated)"),
            "the server crashed or cut the stream; check its log",
        ),
        _ => Error::input(format!("{url}: error while {doing}: {e}")),
    }
}

fn too_large(url: &str) -> Error {
    Error::input_with_help(
        format!(
            "{url}: the response is larger than {} MiB",
            MAX_BODY_BYTES >> 20
        ),
        "is this an inference server? measure asks for one generated token per request",
    )
}

pub fn secs(d: Duration) -> String {
    format!("{:.1}s", d.as_secs_f64())
}

/// Printable start of a body, for error messages.
pub fn snippet(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(&bytes[..bytes.len().min(300)]);
    let text: String = text
        .chars()
        .map(|c| if c.is_control() && c != '\n' { '?' } else { c })
        .collect();
    let text = text.trim().replace('\n', " ");
    if bytes.len() > 300 {
        format!("{text}…")
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints() {
        let e = Endpoint::parse("http://127.0.0.1:8000/").unwrap();
        assert_eq!(
            e.url("/v1/completions"),
            "http://127.0.0.1:8000/v1/completions"
        );
        let e = Endpoint::parse("http://gpu-box:8080/proxy/v1").unwrap();
        assert_eq!(e.base(), "http://gpu-box:8080/proxy");
        let e = Endpoint::parse("http://localhost").unwrap();
        assert_eq!(e.base(), "http://localhost:80");
        let e = Endpoint::parse("http://[::1]:9000/llama/").unwrap();
        assert_eq!(e.base(), "http://[::1]:9000/llama");
        assert_eq!(e.authority(), "[::1]:9000");
        assert!(Endpoint::parse("https://x").is_err());
        assert!(Endpoint::parse("ftp://x").is_err());
        assert!(Endpoint::parse("http://x:notaport").is_err());
    }
}
