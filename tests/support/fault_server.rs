//! A scripted HTTP server on 127.0.0.1 that misbehaves on purpose, for issue 8's
//! server-fault cases. The first `good` requests get a valid stream; later ones get `fault`.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

#[derive(Debug, Clone)]
pub enum Fault {
    /// Read the request and never answer (first-byte timeout).
    Silent,
    /// Answer with this status and body.
    Status(u16, &'static str),
    /// Write these bytes as-is, then close.
    Raw(String),
    /// An SSE head, then one byte of an endless event every `interval`.
    Drip(Duration),
    /// An SSE head, then data without end.
    Endless,
}

pub struct FaultServer {
    pub url: String,
    pub requests: Arc<AtomicUsize>,
}

pub const SSE_HEAD: &str =
    "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n";

/// A valid one-token stream that reports `cached` of `prompt` tokens.
pub fn good_stream(prompt: usize, cached: usize) -> String {
    format!(
        "{SSE_HEAD}data: {{\"choices\":[{{\"text\":\"hi\",\"index\":0,\"finish_reason\":null}}]}}\n\n\
         data: {{\"choices\":[{{\"text\":\"\",\"index\":0,\"finish_reason\":\"length\"}}],\"usage\":{{\"prompt_tokens\":{prompt},\"completion_tokens\":1,\"prompt_tokens_details\":{{\"cached_tokens\":{cached}}}}}}}\n\n\
         data: [DONE]\n\n"
    )
}

impl FaultServer {
    pub fn start(good: usize, fault: Fault) -> FaultServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        let url = format!("http://{}", listener.local_addr().expect("local addr"));
        let requests = Arc::new(AtomicUsize::new(0));
        let counter = requests.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().map_while(Result::ok) {
                let n = counter.fetch_add(1, Ordering::SeqCst);
                let fault = fault.clone();
                std::thread::spawn(move || serve(stream, n < good, fault));
            }
        });
        FaultServer { url, requests }
    }
}

fn serve(mut stream: TcpStream, good: bool, fault: Fault) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    read_request(&mut stream);
    if good {
        let _ = stream.write_all(good_stream(100, 0).as_bytes());
        return;
    }
    match fault {
        Fault::Silent => std::thread::sleep(Duration::from_secs(30)),
        Fault::Status(code, body) => {
            let _ = write!(
                stream,
                "HTTP/1.1 {code} Oops\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
        Fault::Raw(bytes) => {
            let _ = stream.write_all(bytes.as_bytes());
        }
        Fault::Drip(interval) => {
            let _ = stream.write_all(format!("{SSE_HEAD}data: {{\"choices\":").as_bytes());
            for _ in 0..600 {
                std::thread::sleep(interval);
                if stream.write_all(b" ").is_err() {
                    return;
                }
            }
        }
        Fault::Endless => {
            let _ = stream.write_all(format!("{SSE_HEAD}data: \"").as_bytes());
            let block = vec![b'x'; 64 * 1024];
            for _ in 0..4096 {
                if stream.write_all(&block).is_err() {
                    return;
                }
            }
        }
    }
}

/// Reads the head and a Content-Length body, so the client's write never blocks.
fn read_request(stream: &mut TcpStream) {
    let mut data = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => data.extend_from_slice(&buf[..n]),
        }
        if let Some(end) = data.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&data[..end]).to_ascii_lowercase();
            let length = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse::<usize>().ok())
                .unwrap_or(0);
            if data.len() >= end + 4 + length {
                return;
            }
        }
    }
}
