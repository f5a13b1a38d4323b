//! Helpers for the end-to-end suite: find (or build) the binaries and run
//! MPI jobs under `dnrun`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Mutex, Once, OnceLock};

pub mod matrix;

/// The target directory of the current build profile (where `dnrun` lives).
pub fn bin_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    // target/<profile>/deps/<test>-<hash>
    exe.parent().and_then(Path::parent).map(Path::to_path_buf).expect("target directory")
}

static BUILD: Once = Once::new();

/// Make sure `dnrun`, `dimmnet-sim` and `mpi-suite` in [`bin_dir`] are built
/// from the current sources, with the same profile as the tests.
///
/// `cargo test` alone does not rebuild other packages' binaries, so a plain
/// `cargo test -p sim-tests` after an edit would otherwise run stale ones.
/// The build is a no-op (a fraction of a second) when they are up to date.
pub fn ensure_binaries() {
    BUILD.call_once(|| {
        let dir = bin_dir();
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let release = dir.file_name().is_some_and(|n| n == "release");
        let mut cmd = Command::new(cargo);
        cmd.args(["build", "--quiet", "--bins", "-p", "mpi-tools", "-p", "hw-tools", "-p", "sim-tests"]);
        if release {
            cmd.arg("--release");
        }
        let st = cmd.status().expect("run cargo build");
        assert!(st.success(), "building the binaries for the end-to-end suite failed");
        for b in ["dnrun", "dimmnet-sim", "mpi-suite", "dnbench"] {
            assert!(dir.join(b).is_file(), "{} was not built", dir.join(b).display());
        }
    });
}

/// The repository's root.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("repository root").to_path_buf()
}

/// A prefix installed by `scripts/install.sh --from` (bin/mpicc, bin/mpicxx,
/// bin/mpiexec, include/mpi.h, lib/libmpi_abi.so.1, lib/pkgconfig),
/// linking this build's library and programs.
pub fn c_prefix() -> &'static Path {
    static P: OnceLock<PathBuf> = OnceLock::new();
    P.get_or_init(|| {
        ensure_binaries();
        let dir = bin_dir();
        let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
        cmd.args(["build", "--quiet", "-p", "capi", "-p", "mpi-fortran"]);
        if dir.file_name().is_some_and(|n| n == "release") {
            cmd.arg("--release");
        }
        assert!(cmd.status().expect("run cargo").success(), "building libmpi_abi failed");
        // One prefix per test executable: several may build at once.
        let exe = std::env::current_exe().ok().and_then(|e| e.file_name().map(|n| n.to_string_lossy().into_owned()));
        let p = dir.join(format!("c-prefix-{}", exe.unwrap_or_default()));
        let _ = std::fs::remove_dir_all(&p);
        let o = Command::new(repo().join("scripts/install.sh"))
            .arg("--from")
            .arg(&dir)
            .arg(&p)
            .output()
            .expect("run scripts/install.sh");
        assert!(o.status.success(), "scripts/install.sh --from failed:\n{}", String::from_utf8_lossy(&o.stderr));
        p
    })
}

/// Compile `sim-tests/c/<name>.c` with our mpicc (warnings are errors)
/// into `c-<name>` beside the binaries.
pub fn build_c(name: &str) -> PathBuf {
    build_c_with(name, &format!("c-{name}"), &[])
}

/// [`build_c`] into `out` (beside the binaries), with more compiler flags.
///
/// Each output is built once per test executable, however many tests ask
/// for it at once: tests run in parallel threads, and a test must never
/// run a program another test is still writing. The compiler writes a
/// temporary file that is renamed into place, so another test executable
/// building the same output sees the old file or the new, never half of one.
pub fn build_c_with(name: &str, out: &str, flags: &[&str]) -> PathBuf {
    type Built = Mutex<HashMap<String, (String, Vec<String>)>>;
    static BUILT: OnceLock<Built> = OnceLock::new();
    let mut built = BUILT.get_or_init(Built::default).lock().unwrap_or_else(|e| e.into_inner());
    let path = bin_dir().join(out);
    let want = (name.to_string(), flags.iter().map(|f| f.to_string()).collect::<Vec<_>>());
    if let Some(had) = built.get(out) {
        assert_eq!(had, &want, "two tests build {out} from different sources or flags");
        return path;
    }
    let tmp = bin_dir().join(format!(".{out}.{}.tmp", std::process::id()));
    let src = repo().join(format!("sim-tests/c/{name}.c"));
    let o = Command::new(c_prefix().join("bin/mpicc"))
        .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-O2"])
        .args(flags)
        .arg("-o")
        .arg(&tmp)
        .arg(&src)
        .output()
        .expect("run mpicc (is a C compiler installed?)");
    assert!(o.status.success(), "mpicc {name}.c failed:\n{}", String::from_utf8_lossy(&o.stderr));
    std::fs::rename(&tmp, &path).expect("move the built program into place");
    built.insert(out.to_string(), want);
    path
}

/// Run `dnrun -n np --nodes nodes [extra...] -- program args...`.
pub fn dnrun(np: u32, nodes: u16, extra: &[&str], program: &str, args: &[&str]) -> Output {
    dnrun_command(np, nodes, extra, program, args).output().expect("run dnrun")
}

/// The command [`dnrun`] runs, its output piped, to start as the caller
/// needs (several jobs at once).
pub fn dnrun_command(np: u32, nodes: u16, extra: &[&str], program: &str, args: &[&str]) -> Command {
    ensure_binaries();
    let dir = bin_dir();
    let mut c = Command::new(dir.join("dnrun"));
    c.args(["-n", &np.to_string(), "--nodes", &nodes.to_string(), "--timeout", "300"])
        .args(extra)
        .arg("--")
        .arg(dir.join(program))
        .args(args)
        .env("DN_SIM_BIN", dir.join("dimmnet-sim"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    c
}

/// Directories this process's jobs may have left in /dev/shm.
pub fn leftover_job_dirs(pid: u32) -> Vec<PathBuf> {
    std::fs::read_dir("/dev/shm")
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .map(|e| e.path())
                .filter(|p| {
                    p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with(&format!("dnrun-{pid}-")))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Run `mpi-suite TEST [ARGS]` (`test` may carry arguments: "overlap 60")
/// on `np` ranks over `backend` with `-x` for each of `env`: whether it
/// succeeded, its stdout and its stderr.
pub fn run_suite(backend: &str, test: &str, np: u32, env: &[&str]) -> (bool, String, String) {
    run_suite_with(backend, test, np, 1, &[], env)
}

/// [`run_suite`] on `nodes` nodes with more `dnrun` flags.
pub fn run_suite_with(
    backend: &str,
    test: &str,
    np: u32,
    nodes: u16,
    flags: &[&str],
    env: &[&str],
) -> (bool, String, String) {
    let mut extra = vec!["--backend", backend];
    extra.extend_from_slice(flags);
    for e in env {
        extra.push("-x");
        extra.push(e);
    }
    let args: Vec<&str> = test.split_whitespace().collect();
    let out = dnrun(np, nodes, &extra, "mpi-suite", &args);
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// [`run_suite`] that must print `OK <test>`; returns stdout and stderr.
pub fn run_suite_ok(backend: &str, test: &str, np: u32, env: &[&str]) -> String {
    let (ok, stdout, stderr) = run_suite(backend, test, np, env);
    assert!(
        ok && stdout.contains(&format!("OK {}", test.split_whitespace().next().unwrap_or(test))),
        "{test} on {np} ranks over {backend} {env:?} failed:\n--- stdout\n{stdout}\n--- stderr\n{stderr}"
    );
    stdout + &stderr
}

/// Whether the DPDK tests can run: this build has DPDK. Without it, a test
/// that needs it says it was skipped and why (shown with `--nocapture`;
/// `scripts/test.sh` says so up front), or fails when `DN_REQUIRE_DPDK` is
/// set, as in CI, where a missing DPDK must not pass as a green suite.
pub fn dpdk_or_skip(test: &str) -> bool {
    match adi::backend::dpdk::available() {
        Ok(()) => true,
        Err(why) if adi::knobs::flag("DN_REQUIRE_DPDK").unwrap_or(true) => {
            panic!("{test}: DN_REQUIRE_DPDK is set but this build has no DPDK: {why}")
        }
        Err(why) => {
            eprintln!("SKIPPED {test}: {why}");
            false
        }
    }
}

/// Live (non-zombie) processes whose environment holds `DN_TEST_MARKER=marker`.
pub fn marked_processes(marker: &str) -> Vec<u32> {
    let needle = format!("DN_TEST_MARKER={marker}");
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else { continue };
        let Ok(env) = std::fs::read(e.path().join("environ")) else { continue };
        let zombie = std::fs::read_to_string(e.path().join("stat"))
            .ok()
            .and_then(|s| s.rsplit_once(')').map(|(_, r)| r.trim_start().starts_with('Z')))
            .unwrap_or(true);
        if !zombie && env.split(|b| *b == 0).any(|kv| kv == needle.as_bytes()) {
            out.push(pid);
        }
    }
    out
}

/// The command name of process `pid` (`/proc/PID/comm`), empty if gone.
pub fn process_name(pid: u32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/comm")).map(|s| s.trim().to_string()).unwrap_or_default()
}
