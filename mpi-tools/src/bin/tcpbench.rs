//! `tcpbench`: the plain TCP baseline for the UDP backend — a ping-pong and
//! a stream between two processes over loopback, with TCP_NODELAY and, by
//! default, non-blocking sockets whose reads are busy-polled (as MPI
//! libraries poll). Each message is a 4-byte length and the payload (a TCP
//! stream has no message boundaries), so "0 bytes" is a 4-byte frame.
//!
//! `bw` receives each message of a window into its own buffer, as an MPI
//! receiver with a window of posted receives does (the same memory
//! footprint as `dnbench bw`).
//!
//! It is meant to be what a good TCP ping-pong is (issue 8's fair
//! baseline): a message leaves with one `writev` of the length and the
//! payload from where it lies (no frame copy), and arrives with one `readv`
//! into the length word and the receive buffer (the receiver knows the size,
//! as an MPI receive with a posted buffer does), each looping only on a
//! partial transfer; the warm-up is `--warmup` rounds, as in `dnbench`.
//!
//! `tcpbench latency --sizes 0:4M --json` (same output shape as `dnbench`).

use std::io::{ErrorKind, IoSlice, IoSliceMut, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Command, ExitCode};
use std::time::Instant;

use clap::{Parser, ValueEnum};
use mpi_tools::bench::{bw_iterations, iterations_for, Row, BW_MAX_WARMUP, LATENCY_WARMUP};

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Test {
    /// One-way latency (half round trip).
    Latency,
    /// Unidirectional bandwidth with windows of messages.
    Bw,
}

/// Plain TCP ping-pong and stream between two processes on loopback.
#[derive(Parser, Debug)]
#[command(version, about)]
struct Args {
    /// Which benchmark.
    #[arg(value_enum)]
    test: Test,
    /// Sizes: a list or a power-of-two range (`0:4M`).
    #[arg(long, default_value = "0:4M")]
    sizes: String,
    /// Iterations per size (a tenth for 64 KiB and more).
    #[arg(long, default_value_t = 1000)]
    iters: u32,
    /// Messages per window (bw).
    #[arg(long, default_value_t = 64)]
    window: u32,
    /// Blocking reads instead of busy polling.
    #[arg(long)]
    blocking: bool,
    /// Warm-up round trips (latency) per size, as `dnbench --warmup`.
    #[arg(long, default_value_t = LATENCY_WARMUP)]
    warmup: u32,
    /// JSON output.
    #[arg(long)]
    json: bool,
    /// Address to listen on, which the peer connects to (another network
    /// namespace's address with `--peer-via`).
    #[arg(long, default_value = "127.0.0.1")]
    listen: std::net::IpAddr,
    /// Start the peer process through this command, split at spaces (e.g.
    /// `"ip netns exec dn-b"` to run it in another network namespace).
    #[arg(long)]
    peer_via: Option<String>,
    /// Internal: run as the echo/sink side connected to this port.
    #[arg(long, hide = true)]
    peer: Option<u16>,
}

/// Fill every slice of `bufs` from the stream: one `readv` when the bytes
/// are there, more only on a partial read.
fn readv_full(s: &mut TcpStream, mut bufs: &mut [IoSliceMut<'_>], busy: bool) -> std::io::Result<()> {
    while !bufs.is_empty() {
        match s.read_vectored(bufs) {
            Ok(0) => return Err(ErrorKind::UnexpectedEof.into()),
            Ok(n) => IoSliceMut::advance_slices(&mut bufs, n),
            Err(e) if e.kind() == ErrorKind::WouldBlock && busy => std::hint::spin_loop(),
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
        // Drop the slices already full (advance_slices leaves empty ones
        // only at the end when everything was read).
        while bufs.first().is_some_and(|b| b.is_empty()) {
            bufs = &mut bufs[1..];
        }
    }
    Ok(())
}

/// Send a 4-byte length and the payload with one `writev`, from where they
/// lie (no copy into a frame).
fn send_msg(s: &mut TcpStream, payload: &[u8]) -> std::io::Result<()> {
    let len = (payload.len() as u32).to_le_bytes();
    let mut parts = [IoSlice::new(&len), IoSlice::new(payload)];
    let mut bufs = &mut parts[..];
    while !bufs.is_empty() {
        match s.write_vectored(bufs) {
            Ok(0) => return Err(ErrorKind::WriteZero.into()),
            Ok(n) => IoSlice::advance_slices(&mut bufs, n),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::Interrupted) => std::hint::spin_loop(),
            Err(e) => return Err(e),
        }
        while bufs.first().is_some_and(|b| b.is_empty()) {
            bufs = &mut bufs[1..];
        }
    }
    Ok(())
}

/// Receive a message of the known size into `buf` with one `readv` of the
/// length word and the payload; a different length is an error.
fn recv_msg(s: &mut TcpStream, buf: &mut [u8], busy: bool) -> std::io::Result<()> {
    let mut len = [0u8; 4];
    let want = buf.len();
    readv_full(s, &mut [IoSliceMut::new(&mut len), IoSliceMut::new(buf)], busy)?;
    let got = u32::from_le_bytes(len) as usize;
    if got != want {
        return Err(std::io::Error::other(format!("a {got}-byte message where {want} bytes were expected")));
    }
    Ok(())
}

fn setup(s: &TcpStream, busy: bool) -> std::io::Result<()> {
    s.set_nodelay(true)?;
    s.set_nonblocking(busy)
}

/// The other process: echo (latency) or sink-and-acknowledge (bw).
fn peer(args: &Args, port: u16) -> std::io::Result<()> {
    let busy = !args.blocking;
    let mut s = TcpStream::connect((args.listen, port))?;
    setup(&s, busy)?;
    for size in adi::config::parse_size_list(&args.sizes).map_err(std::io::Error::other)? {
        let iters = iterations_for(size, args.iters);
        match args.test {
            Test::Latency => {
                let mut buf = vec![0u8; size];
                for _ in 0..iters + args.warmup {
                    recv_msg(&mut s, &mut buf, busy)?;
                    send_msg(&mut s, &buf)?;
                }
            }
            Test::Bw => {
                // One buffer per message of a window, as an MPI receiver
                // posting a window of receives has.
                let mut bufs: Vec<Vec<u8>> = (0..args.window).map(|_| vec![0u8; size]).collect();
                for _ in 0..bw_iterations(size, args.iters) + BW_MAX_WARMUP {
                    for b in bufs.iter_mut() {
                        recv_msg(&mut s, b, busy)?;
                    }
                    send_msg(&mut s, &[1, 2, 3, 4])?;
                }
            }
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    let args = Args::parse();
    if let Some(port) = args.peer {
        return match peer(&args, port) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("tcpbench peer: {e}");
                ExitCode::FAILURE
            }
        };
    }
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("tcpbench: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: &Args) -> Result<(), String> {
    let sizes = adi::config::parse_size_list(&args.sizes).map_err(|e| e.to_string())?;
    let busy = !args.blocking;
    let listener = TcpListener::bind((args.listen, 0)).map_err(|e| format!("cannot listen on {}: {e}", args.listen))?;
    let port = listener.local_addr().map_err(|e| e.to_string())?.port();
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let via: Vec<&str> = args.peer_via.as_deref().unwrap_or("").split_whitespace().collect();
    let mut cmd = match via.split_first() {
        Some((first, rest)) => {
            let mut c = Command::new(first);
            c.args(rest).arg(exe);
            c
        }
        None => Command::new(exe),
    };
    let mut child = cmd
        .args(std::env::args().skip(1))
        .arg("--peer")
        .arg(port.to_string())
        .spawn()
        .map_err(|e| format!("cannot start the peer process: {e}"))?;
    let (mut s, _) = listener.accept().map_err(|e| e.to_string())?;
    setup(&s, busy).map_err(|e| e.to_string())?;
    let mut rows = Vec::new();
    let mut ack = [0u8; 4];
    for &size in &sizes {
        let msg = vec![7u8; size];
        let mut buf = vec![0u8; size];
        let iters = iterations_for(size, args.iters);
        let io = |e: std::io::Error| e.to_string();
        match args.test {
            Test::Latency => {
                let mut t0 = Instant::now();
                for i in 0..iters + args.warmup {
                    if i == args.warmup {
                        t0 = Instant::now();
                    }
                    send_msg(&mut s, &msg).map_err(io)?;
                    recv_msg(&mut s, &mut buf, busy).map_err(io)?;
                }
                let us = t0.elapsed().as_secs_f64() * 1e6 / (2.0 * iters as f64);
                rows.push(Row {
                    size,
                    latency_us: Some(us),
                    mbps: None,
                    overlap_pct: None,
                    protocol: "tcp",
                    iterations: iters,
                });
            }
            Test::Bw => {
                let iters = bw_iterations(size, args.iters);
                let mut t0 = Instant::now();
                for i in 0..iters + BW_MAX_WARMUP {
                    if i == BW_MAX_WARMUP {
                        t0 = Instant::now();
                    }
                    for _ in 0..args.window {
                        send_msg(&mut s, &msg).map_err(io)?;
                    }
                    recv_msg(&mut s, &mut ack, busy).map_err(io)?;
                }
                let mbps = size as f64 * args.window as f64 * iters as f64 / t0.elapsed().as_secs_f64() / 1e6;
                rows.push(Row {
                    size,
                    latency_us: None,
                    mbps: Some(mbps),
                    overlap_pct: None,
                    protocol: "tcp",
                    iterations: iters,
                });
            }
        }
        if let Some(r) = rows.last().filter(|_| !args.json) {
            println!("{}", r.text());
        }
    }
    let _ = child.wait();
    if args.json {
        println!("{}", serde_json::to_string(&rows).map_err(|e| e.to_string())?);
    }
    Ok(())
}
