//! The model as a device (`dimmnet-sim serve --realtime`, issue 51): what
//! `scripts/vm-test.sh` runs in a virtual machine against a real PCI BAR
//! runs here against the node files, with the same binaries: the device
//! tests (`dimmnet-sim devcheck`) and an MPI program whose ranks drive the
//! card through the driver's hardware path (no scheduler, wall-clock time).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use sim_tests::{bin_dir, build_c, ensure_binaries};

/// A `dimmnet-sim serve --realtime` process, stopped (SIGINT, as a user
/// would) when dropped.
struct Device {
    child: Child,
    dir: PathBuf,
}

impl Device {
    fn start(tag: &str, nodes: u16, slots: u16, pace: &str) -> Device {
        ensure_binaries();
        let dir = std::env::temp_dir().join(format!("dn-realtime-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let mut child = Command::new(bin_dir().join("dimmnet-sim"))
            .args(["serve", "--nodes", &nodes.to_string(), "--slots", &slots.to_string(), "--partition-mib", "16"])
            .arg(format!("--realtime={pace}"))
            .arg("--dir")
            .arg(&dir)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start dimmnet-sim serve --realtime");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout")).read_line(&mut line).expect("read its first line");
        assert!(line.contains("ready") && line.contains("real time"), "serve --realtime said {line:?}");
        Device { child, dir }
    }

    fn node(&self, n: u16) -> PathBuf {
        self.dir.join(format!("node{n}.mmio"))
    }

    /// Stop it and return what it reported.
    fn stop(mut self) -> String {
        let _ = Command::new("kill").args(["-INT", &self.child.id().to_string()]).status();
        let out = std::mem::replace(&mut self.child, Command::new("true").spawn().expect("spawn true"))
            .wait_with_output()
            .expect("wait for dimmnet-sim");
        assert!(out.status.success(), "serve --realtime failed: {}", String::from_utf8_lossy(&out.stderr));
        assert!(!self.dir.exists(), "serve --realtime left {}", self.dir.display());
        String::from_utf8_lossy(&out.stderr).into_owned()
    }
}

impl Drop for Device {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn devcheck(device: &Path) -> (bool, String) {
    let out = Command::new(bin_dir().join("dimmnet-sim"))
        .args(["devcheck", "--device"])
        .arg(device)
        .output()
        .expect("run dimmnet-sim devcheck");
    (out.status.success(), format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)))
}

#[test]
fn the_device_tests_pass_on_the_model_as_a_device_at_either_pace() {
    for pace in ["wall", "fast"] {
        let dev = Device::start(pace, 1, 2, pace);
        let (ok, out) = devcheck(&dev.node(0));
        assert!(ok, "devcheck at pace {pace}:\n{out}");
        for want in ["a card", "VS/VL", "RVS/RVL", "1000 records in order", "concurrent fetch-and-adds", "protection"] {
            assert!(out.contains(want), "devcheck at pace {pace} did not report {want:?}:\n{out}");
        }
        let report = dev.stop();
        assert!(report.contains("in real time") && !report.contains(" 0 commands"), "{report}");
    }
}

/// `dimmnet-sim fuzz --device` checks read-backs and error codes on any
/// device; on the model in real time, the same as on the simulator.
#[test]
fn the_register_fuzzer_passes_on_the_model_as_a_device() {
    let dev = Device::start("fuzz", 2, 2, "fast");
    let out = Command::new(bin_dir().join("dimmnet-sim"))
        .args(["fuzz", "--cases", "40", "--seed", "51", "--device"])
        .arg(dev.node(0))
        .output()
        .expect("run dimmnet-sim fuzz");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success() && text.contains("40 cases passed"), "{text}");
    let report = dev.stop();
    assert!(!report.contains("(0 refused)"), "the fuzzer's defects were refused: {report}");
}

#[test]
fn a_slot_the_device_does_not_have_fails_the_device_tests_by_name() {
    let dev = Device::start("oneslot", 1, 1, "wall");
    let (ok, out) = devcheck(&dev.node(0));
    assert!(!ok, "devcheck passed on a one-slot node:\n{out}");
    assert!(out.contains("these checks need 2"), "{out}");
}

/// The same C binary that runs on the simulator under dnrun runs with its
/// ranks started by hand against the device, as on a machine with cards:
/// within a node (two slots) and across two nodes of the fabric.
#[test]
fn an_mpi_pingpong_runs_over_the_model_as_a_device() {
    let prog = build_c("pingpong");
    for (nodes, slots) in [(1u16, 2u16), (2, 1)] {
        let dev = Device::start(&format!("pp{nodes}"), nodes, slots, "wall");
        let ranks: Vec<_> = (0..2u16)
            .map(|r| {
                let node = if nodes == 2 { r } else { 0 };
                Command::new(&prog)
                    .args(["300", "4096"])
                    .env("DN_BACKEND", "dimmnet")
                    .env("DN_DEVICE", dev.node(node))
                    .env("DN_RANK", r.to_string())
                    .env("DN_SIZE", "2")
                    .env("DN_NODES", nodes.to_string())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn()
                    .expect("start a rank")
            })
            .collect();
        let outs: Vec<_> = ranks.into_iter().map(|c| c.wait_with_output().expect("wait for a rank")).collect();
        for (r, o) in outs.iter().enumerate() {
            assert!(
                o.status.success(),
                "rank {r} on {nodes} node(s): {}{}",
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            );
        }
        let out = String::from_utf8_lossy(&outs[0].stdout);
        assert!(out.contains("OK pingpong 4096 B"), "{out}");
        let report = dev.stop();
        assert!(report.contains("in real time"), "{report}");
    }
}
