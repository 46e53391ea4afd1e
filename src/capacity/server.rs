//! The live cross-check (`--server URL`): ask a running server how much KV cache it really
//! allocated, and put its token capacity beside the computed one.
//!
//! What is read, and only this:
//! - vLLM, `GET /metrics`: the labels of the `vllm:cache_config_info` gauge, `num_gpu_blocks`
//!   and `block_size` (also `cache_dtype`, `enable_prefix_caching` when present). Capacity is
//!   num_gpu_blocks × block_size tokens.
//! - llama.cpp, `GET /props`: `default_generation_settings.n_ctx` (the context of one slot,
//!   already divided by the slot count unless the KV cache is unified) and `total_slots`.
//!
//! A small HTTP/1.1 client over `std::net::TcpStream` with timeouts: plain `http://` only.

use super::CapacityReport;
use serde::Serialize;
use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

use crate::error::{Error, Result};

const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
const IO_TIMEOUT: Duration = Duration::from_secs(15);
/// /metrics of a busy vLLM is a few hundred KiB; anything far larger is not what we asked for.
const MAX_RESPONSE_BYTES: u64 = 16 * 1024 * 1024;

/// What a server says about its own KV cache.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerCapacity {
    Vllm {
        block_size: u64,
        num_gpu_blocks: u64,
        cache_dtype: Option<String>,
        prefix_caching: Option<bool>,
        /// How many `cache_config_info` series there were (one per engine with data parallelism).
        engines: usize,
    },
    LlamaCpp {
        n_ctx_per_slot: u64,
        slots: u64,
    },
}

/// The `server` object of the JSON report.
#[derive(Debug, Clone, Serialize)]
pub struct ServerReport {
    pub url: String,
    /// `vllm` or `llama.cpp`.
    pub engine: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub block_size: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub num_gpu_blocks: Option<u64>,
    /// vLLM: `num_gpu_blocks` less the null block, the one block vLLM reserves and never
    /// fills (its block pool takes block 0 out as the null block).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usable_blocks: Option<u64>,
    /// vLLM: the blocks this report computes for the same memory (`blocks`), to compare with
    /// `num_gpu_blocks`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub computed_blocks: Option<u128>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_dtype: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prefix_caching: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub n_ctx_per_slot: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slots: Option<u64>,
    /// The server's own token capacity: num_gpu_blocks × block_size (vLLM), or
    /// slots × n_ctx per slot (llama.cpp; n_ctx alone when its KV cache is unified).
    pub token_capacity: u128,
    /// `token_capacity` of the computed report, repeated here to compare.
    pub computed_token_capacity: u128,
    pub notes: Vec<String>,
}

impl ServerReport {
    pub fn new(url: &str, found: ServerCapacity, report: &CapacityReport) -> Self {
        let mut notes = Vec::new();
        let computed = report.token_capacity;
        match found {
            ServerCapacity::Vllm {
                block_size,
                num_gpu_blocks,
                cache_dtype,
                prefix_caching,
                engines,
            } => {
                if block_size != report.block_size {
                    notes.push(format!(
                        "the server uses blocks of {block_size} tokens, this report {}: pass --block-size {block_size}",
                        report.block_size
                    ));
                } else {
                    notes.push(compare_blocks(num_gpu_blocks, report));
                }
                if engines > 1 {
                    notes.push(format!(
                        "{engines} engines report a cache; the first is shown (one per data-parallel rank)"
                    ));
                }
                notes.push("vLLM sizes its cache from gpu_memory_utilization after profiling; with tensor parallelism one block spans all GPUs".into());
                ServerReport {
                    url: url.to_owned(),
                    engine: "vllm",
                    block_size: Some(block_size),
                    num_gpu_blocks: Some(num_gpu_blocks),
                    usable_blocks: Some(num_gpu_blocks.saturating_sub(1)),
                    computed_blocks: Some(report.blocks),
                    cache_dtype,
                    prefix_caching,
                    n_ctx_per_slot: None,
                    slots: None,
                    token_capacity: num_gpu_blocks as u128 * block_size as u128,
                    computed_token_capacity: computed,
                    notes,
                }
            }
            ServerCapacity::LlamaCpp {
                n_ctx_per_slot,
                slots,
            } => {
                notes.push(format!(
                    "llama.cpp runs at most {slots} requests at once, each up to {n_ctx_per_slot} tokens; with a unified KV cache (--kv-unified) the slots share {n_ctx_per_slot} tokens instead"
                ));
                ServerReport {
                    url: url.to_owned(),
                    engine: "llama.cpp",
                    block_size: None,
                    num_gpu_blocks: None,
                    usable_blocks: None,
                    computed_blocks: None,
                    cache_dtype: None,
                    prefix_caching: None,
                    n_ctx_per_slot: Some(n_ctx_per_slot),
                    slots: Some(slots),
                    token_capacity: n_ctx_per_slot as u128 * slots as u128,
                    computed_token_capacity: computed,
                    notes,
                }
            }
        }
    }
}

/// Asks the server at `url`: vLLM's /metrics first, then llama.cpp's /props.
/// vLLM's block count against the computed one, at the same block size: they agree, or the
/// difference is said in blocks and bytes.
fn compare_blocks(num_gpu_blocks: u64, report: &CapacityReport) -> String {
    let (server, computed) = (num_gpu_blocks as u128, report.blocks);
    let block_bytes = report.kv_bytes_per_block;
    let null_block = format!(
        "block 0 is vLLM's null block, so {} blocks hold tokens",
        num_gpu_blocks.saturating_sub(1)
    );
    if server == computed {
        return format!(
            "the server allocated {num_gpu_blocks} blocks and this report computes {computed} for the memory given: they agree ({null_block})"
        );
    }
    let (more, fewer, who) = if server > computed {
        (server, computed, "the server has")
    } else {
        (computed, server, "this report computes")
    };
    let blocks = more - fewer;
    format!(
        "the server allocated {num_gpu_blocks} blocks, this report computes {computed}: {who} {blocks} more, {} bytes of {block_bytes}-byte blocks; vLLM's blocks take {} bytes, this report's KV memory is {} bytes (on CPU it is VLLM_CPU_KVCACHE_SPACE; give it as --gpu-memory with --weights 0B) ({null_block})",
        blocks * block_bytes,
        server * block_bytes,
        report.memory.available_bytes
    )
}

pub fn probe(url: &str) -> Result<ServerCapacity> {
    let target = parse_url(url)?;
    let mut tried = Vec::new();
    match get(&target, "/metrics") {
        Ok((200, body)) if body.contains("vllm:cache_config_info") => {
            return parse_vllm_metrics(&body)
                .map_err(|why| Error::input(format!("--server {url}: /metrics: {why}")));
        }
        Ok((status, _)) => tried.push(format!(
            "GET /metrics: HTTP {status}, no vllm:cache_config_info"
        )),
        Err(why) if why.connect => {
            return Err(Error::input_with_help(
                format!("--server {url}: cannot connect: {}", why.message),
                "start the server, or check the host and port",
            ))
        }
        Err(why) => tried.push(format!("GET /metrics: {}", why.message)),
    }
    match get(&target, "/props") {
        Ok((200, body)) => {
            return parse_llamacpp_props(&body)
                .map_err(|why| Error::input(format!("--server {url}: /props: {why}")));
        }
        Ok((status, _)) => tried.push(format!("GET /props: HTTP {status}")),
        Err(why) => tried.push(format!("GET /props: {}", why.message)),
    }
    Err(Error::input_with_help(
        format!(
            "--server {url} is neither vLLM nor llama.cpp as far as its answers show ({})",
            tried.join("; ")
        ),
        "vLLM exposes vllm:cache_config_info on /metrics; llama.cpp answers /props",
    ))
}

/// Reads `vllm:cache_config_info{...}` from a Prometheus text exposition.
pub fn parse_vllm_metrics(text: &str) -> std::result::Result<ServerCapacity, String> {
    let series: Vec<Vec<(String, String)>> = text
        .lines()
        .filter_map(|line| line.trim().strip_prefix("vllm:cache_config_info{"))
        .map(parse_labels)
        .collect::<std::result::Result<_, _>>()?;
    let Some(labels) = series.first() else {
        return Err("no vllm:cache_config_info series".into());
    };
    let label = |name: &str| {
        labels
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    };
    let number = |name: &str| -> std::result::Result<u64, String> {
        match label(name) {
            None => Err(format!("vllm:cache_config_info has no {name} label")),
            Some(value) => value.parse::<u64>().map_err(|_| {
                format!("vllm:cache_config_info {name}=\"{value}\": the server has not sized its cache yet")
            }),
        }
    };
    Ok(ServerCapacity::Vllm {
        block_size: number("block_size")?,
        num_gpu_blocks: number("num_gpu_blocks")?,
        cache_dtype: label("cache_dtype").map(str::to_owned),
        prefix_caching: label("enable_prefix_caching").map(|v| v.eq_ignore_ascii_case("true")),
        engines: series.len(),
    })
}

/// `a="1",b="x\"y"} 1.0` → [(a, 1), (b, x"y)]: Prometheus label syntax.
fn parse_labels(rest: &str) -> std::result::Result<Vec<(String, String)>, String> {
    let mut labels = Vec::new();
    let mut chars = rest.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| *c == ',' || c.is_whitespace()) {
            chars.next();
        }
        match chars.peek() {
            Some('}') => return Ok(labels),
            None => return Err("unterminated label set".into()),
            _ => {}
        }
        let name: String = std::iter::from_fn(|| chars.next_if(|c| *c != '=')).collect();
        if chars.next() != Some('=') || chars.next() != Some('"') {
            return Err(format!("malformed label {name:?}"));
        }
        let mut value = String::new();
        loop {
            match chars.next() {
                Some('\\') => match chars.next() {
                    Some('n') => value.push('\n'),
                    Some(c) => value.push(c),
                    None => return Err("unterminated label value".into()),
                },
                Some('"') => break,
                Some(c) => value.push(c),
                None => return Err("unterminated label value".into()),
            }
        }
        labels.push((name.trim().to_owned(), value));
    }
}

/// Reads llama.cpp's `/props`: `default_generation_settings.n_ctx` and `total_slots`.
pub fn parse_llamacpp_props(body: &str) -> std::result::Result<ServerCapacity, String> {
    let props: serde_json::Value =
        serde_json::from_str(body).map_err(|e| format!("not JSON: {e}"))?;
    let n_ctx = props
        .pointer("/default_generation_settings/n_ctx")
        .and_then(serde_json::Value::as_u64)
        .filter(|n| *n > 0)
        .ok_or("no default_generation_settings.n_ctx: not a llama.cpp /props answer")?;
    let slots = props
        .get("total_slots")
        .and_then(serde_json::Value::as_u64)
        .filter(|n| *n > 0)
        .ok_or("no total_slots")?;
    Ok(ServerCapacity::LlamaCpp {
        n_ctx_per_slot: n_ctx,
        slots,
    })
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Target {
    host: String,
    port: u16,
    /// A path prefix (a server behind a proxy under /vllm), without the trailing slash.
    prefix: String,
}

fn parse_url(url: &str) -> Result<Target> {
    let bad = |why: &str| {
        Error::input_with_help(
            format!("--server {url:?}: {why}"),
            "give the server's base URL, e.g. --server http://127.0.0.1:8000",
        )
    };
    let rest = match url.split_once("://") {
        Some(("http", rest)) => rest,
        Some(("https", _)) => {
            return Err(bad(
                "https is not supported; use the server's plain http port",
            ))
        }
        Some(_) => return Err(bad("only http:// URLs are supported")),
        None => url,
    };
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
        let (host, after) = v6.split_once(']').ok_or_else(|| bad("unclosed ["))?;
        (host, after.strip_prefix(':'))
    } else {
        match authority.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        }
    };
    if host.is_empty() || host.contains('@') {
        return Err(bad("no host"));
    }
    let port = match port {
        Some(port) => port.parse::<u16>().map_err(|_| bad("bad port"))?,
        None => 80,
    };
    Ok(Target {
        host: host.to_owned(),
        port,
        prefix: path.trim_end_matches('/').to_owned(),
    })
}

struct HttpError {
    /// The connection itself failed: no point trying another path.
    connect: bool,
    message: String,
}

/// One `GET` with `Connection: close`; returns the status and the (de-chunked) body.
fn get(target: &Target, path: &str) -> std::result::Result<(u16, String), HttpError> {
    let connect_error = |message: String| HttpError {
        connect: true,
        message,
    };
    let io_error = |e: std::io::Error| HttpError {
        connect: false,
        message: e.to_string(),
    };
    let addrs: Vec<_> = (target.host.as_str(), target.port)
        .to_socket_addrs()
        .map_err(|e| connect_error(e.to_string()))?
        .collect();
    let mut last = String::from("no address");
    let mut stream = None;
    for addr in addrs {
        match TcpStream::connect_timeout(&addr, CONNECT_TIMEOUT) {
            Ok(s) => {
                stream = Some(s);
                break;
            }
            Err(e) => last = e.to_string(),
        }
    }
    let mut stream = stream.ok_or_else(|| connect_error(last))?;
    stream
        .set_read_timeout(Some(IO_TIMEOUT))
        .map_err(io_error)?;
    stream
        .set_write_timeout(Some(IO_TIMEOUT))
        .map_err(io_error)?;
    let host = if target.host.contains(':') {
        format!("[{}]:{}", target.host, target.port)
    } else {
        format!("{}:{}", target.host, target.port)
    };
    let request = format!(
        "GET {}{path} HTTP/1.1\r\nHost: {host}\r\nUser-Agent: prefixlint/{}\r\nAccept: */*\r\nConnection: close\r\n\r\n",
        target.prefix,
        env!("CARGO_PKG_VERSION")
    );
    stream.write_all(request.as_bytes()).map_err(io_error)?;
    let mut raw = Vec::new();
    (&mut stream)
        .take(MAX_RESPONSE_BYTES)
        .read_to_end(&mut raw)
        .map_err(io_error)?;
    parse_response(&raw).map_err(|message| HttpError {
        connect: false,
        message,
    })
}

/// Status and body of a raw HTTP/1.1 response (Content-Length, chunked, or read to close).
fn parse_response(raw: &[u8]) -> std::result::Result<(u16, String), String> {
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or("no HTTP header in the answer")?;
    let head = String::from_utf8_lossy(&raw[..split]);
    let mut body = &raw[split + 4..];
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|s| s.parse::<u16>().ok())
        .ok_or("not an HTTP answer")?;
    let mut chunked = false;
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let (name, value) = (name.trim().to_ascii_lowercase(), value.trim());
        if name == "transfer-encoding" && value.to_ascii_lowercase().contains("chunked") {
            chunked = true;
        } else if name == "content-length" {
            if let Ok(len) = value.parse::<usize>() {
                body = &body[..len.min(body.len())];
            }
        }
    }
    let body = if chunked {
        dechunk(body)?
    } else {
        body.to_vec()
    };
    Ok((status, String::from_utf8_lossy(&body).into_owned()))
}

fn dechunk(mut data: &[u8]) -> std::result::Result<Vec<u8>, String> {
    let mut out = Vec::new();
    loop {
        let line_end = data
            .windows(2)
            .position(|w| w == b"\r\n")
            .ok_or("truncated chunk")?;
        let size_text = String::from_utf8_lossy(&data[..line_end]);
        let size_text = size_text.split(';').next().unwrap_or("").trim();
        let size = usize::from_str_radix(size_text, 16).map_err(|_| "bad chunk size")?;
        data = &data[line_end + 2..];
        if size == 0 {
            return Ok(out);
        }
        if data.len() < size {
            return Err("truncated chunk".into());
        }
        out.extend_from_slice(&data[..size]);
        data = data.get(size + 2..).unwrap_or(&[]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        let t = parse_url("http://127.0.0.1:8000").unwrap();
        assert_eq!(
            (t.host.as_str(), t.port, t.prefix.as_str()),
            ("127.0.0.1", 8000, "")
        );
        let t = parse_url("http://[::1]:8080/llama/").unwrap();
        assert_eq!(
            (t.host.as_str(), t.port, t.prefix.as_str()),
            ("::1", 8080, "/llama")
        );
        let t = parse_url("localhost").unwrap();
        assert_eq!(t.port, 80);
        assert!(parse_url("https://x:1").is_err());
        assert!(parse_url("http://:80").is_err());
        assert!(parse_url("http://x:99999").is_err());
    }

    #[test]
    fn responses() {
        let raw = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello world";
        assert_eq!(parse_response(raw).unwrap(), (200, "hello".into()));
        let raw = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6;x=y\r\n world\r\n0\r\n\r\n";
        assert_eq!(parse_response(raw).unwrap(), (200, "hello world".into()));
        assert!(parse_response(b"garbage").is_err());
    }

    #[test]
    fn labels_with_escapes() {
        let labels = parse_labels(r#"a="1",b="x\"y",c="" } 1.0"#).unwrap();
        assert_eq!(labels[1], ("b".into(), "x\"y".into()));
        assert_eq!(labels[2], ("c".into(), "".into()));
        assert!(parse_labels(r#"a="1"#).is_err());
    }
}
