//! Two processes exchange frames over `net_memif` through the safe
//! wrappers: the EAL starts once per process, so the test runs itself
//! twice more as children (`child_role`, which does nothing unless asked).

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use dpdk_sys::{eal_args, Eal, Mempool, Port, PortConfig};

const ROLE: &str = "DN_DPDK_TEST_ROLE";
const FRAMES: u32 = 1000;

/// Run as a child: server echoes every frame back with its bytes
/// complemented; client sends `FRAMES` numbered frames of varying length
/// and checks every echo.
#[test]
fn child_role() {
    let Ok(spec) = std::env::var(ROLE) else { return };
    let (role, socket) = spec.split_once(':').expect("role:socket");
    let prefix = format!("dn-test-{}-{role}", std::process::id());
    let vdev = format!("net_memif0,role={role},socket={socket},socket-abstract=yes,id=0");
    let t0 = Instant::now();
    let eal = Eal::init(&eal_args("memif-test", &prefix, 128, &[vdev])).expect("EAL");
    assert!(matches!(Eal::init(&[]), Err(dpdk_sys::Error::AlreadyStarted)));
    println!("{role}: EAL up {:?} after start", t0.elapsed());
    let pool = Mempool::create(&eal, "test_pool", 2047, 2048 + 128).expect("pool");
    let mut port = Port::start(&eal, "net_memif0", pool, PortConfig::default()).expect("port");
    // The parent starts the client once the server listens: a memif client
    // that finds no server retries only after seconds.
    println!("{role}: port started");
    let deadline = Instant::now() + Duration::from_secs(20);
    while !port.link_up() {
        assert!(Instant::now() < deadline, "memif link never came up");
        std::thread::sleep(Duration::from_millis(1));
    }
    println!("{role}: link up {:?} after start", t0.elapsed());
    let mut rx = Vec::new();
    let mut tx = Vec::new();
    if role == "server" {
        // Until the client's one-byte goodbye: stopping the port earlier
        // would tear the memif connection down under the last echo.
        let mut echoed = 0;
        let mut bye = false;
        while !bye {
            assert!(Instant::now() < deadline, "server: only {echoed} frames echoed");
            port.rx_burst(0, &mut rx, 32);
            for m in rx.drain(..) {
                if m.data().len() == 1 {
                    bye = true;
                    continue;
                }
                let mut out = pool.alloc().expect("mbuf");
                let bytes: Vec<u8> = m.data().iter().map(|b| !b).collect();
                assert!(out.push(&bytes));
                tx.push(out);
                echoed += 1;
            }
            while !tx.is_empty() {
                port.tx_burst(0, &mut tx);
            }
        }
        assert_eq!(echoed, FRAMES);
    } else {
        for i in 0..FRAMES {
            let len = 14 + (i as usize * 7) % 1400;
            let frame: Vec<u8> = (0..len).map(|k| (k as u32 ^ i) as u8).collect();
            let mut m = pool.alloc().expect("mbuf");
            assert!(m.push(&frame));
            tx.push(m);
            while !tx.is_empty() {
                port.tx_burst(0, &mut tx);
            }
            loop {
                assert!(Instant::now() < deadline, "client: no echo of frame {i}");
                if port.rx_burst(0, &mut rx, 1) > 0 {
                    break;
                }
            }
            let echo = rx.pop().expect("one frame");
            assert_eq!(echo.segments(), 1);
            let back: Vec<u8> = echo.data().iter().map(|b| !b).collect();
            assert_eq!(back, frame, "frame {i} came back altered");
        }
        let mut m = pool.alloc().expect("mbuf");
        assert!(m.push(&[0]));
        tx.push(m);
        while !tx.is_empty() {
            port.tx_burst(0, &mut tx);
        }
        // Let the goodbye leave before the port closes.
        std::thread::sleep(Duration::from_millis(100));
        println!("client: {FRAMES} frames echoed intact");
    }
    // Exit without rte_eal_cleanup (see Eal::init); the port closes on drop.
    println!("{role}: closing {:?}", t0.elapsed());
    drop(port);
    println!("{role}: closed {:?}", t0.elapsed());
}

#[test]
fn two_processes_exchange_frames_over_memif() {
    if let Err(e) = dpdk_sys::available() {
        // Built without DPDK: skipped, and said so (scripts/setup.sh
        // installs it); CI sets DN_REQUIRE_DPDK, where this must not pass.
        assert!(
            !dn_knobs::flag("DN_REQUIRE_DPDK").unwrap_or(true),
            "DN_REQUIRE_DPDK is set but this build has no DPDK: {e}"
        );
        eprintln!("SKIPPED two_processes_exchange_frames_over_memif: {e}");
        return;
    }
    if std::env::var(ROLE).is_ok() {
        return;
    }
    let socket = format!("/dn-memif-test-{}", std::process::id());
    let exe = std::env::current_exe().expect("test binary");
    let spawn = |role: &str| {
        Command::new(&exe)
            .args(["--exact", "child_role", "--nocapture", "--test-threads=1"])
            .env(ROLE, format!("{role}:{socket}"))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn a child")
    };
    let mut server = spawn("server");
    let mut out = std::io::BufReader::new(server.stdout.take().expect("server stdout"));
    let mut seen = String::new();
    while !seen.contains("server: port started") {
        let mut line = String::new();
        if std::io::BufRead::read_line(&mut out, &mut line).expect("server output") == 0 {
            break;
        }
        seen += &line;
    }
    let client = spawn("client").wait_with_output().expect("client");
    let rest = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut out, &mut s);
        s
    });
    let mut server = server.wait_with_output().expect("server");
    server.stdout = (seen + &rest.join().expect("reader")).into_bytes();
    let show = |o: &std::process::Output| {
        format!("{}\n{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
    };
    assert!(server.status.success(), "server failed:\n{}", show(&server));
    assert!(client.status.success(), "client failed:\n{}", show(&client));
    assert!(show(&client).contains("1000 frames echoed intact"), "{}", show(&client));
}
