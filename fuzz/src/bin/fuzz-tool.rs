//! Helpers around the AFL++ targets (`scripts/fuzz.sh` calls them):
//!
//! * `seed N DIR` writes N cases of the proptest generator in the
//!   fuzzer's byte format (the seed corpus);
//! * `generate SECONDS` runs the old generator (`dimmnet-sim fuzz`'s) for
//!   that long in this instrumented binary and prints the edges it reached;
//! * `replay registers|raw DIR...` runs every input of the directories and
//!   prints the edges they reach together (an AFL++ queue's coverage);
//! * `minimize registers|raw OUT DIR...` keeps, for every edge the inputs
//!   reach, the smallest input that reaches it (afl-cmin's rule, on this
//!   counter), in OUT, named by a hash of their bytes.
//!
//! Both counts come from the same AFL++ edge map of the same build, so the
//! two fuzzers are compared on one measure.

use std::path::Path;
use std::time::{Duration, Instant};

use dn_fuzz::{Edges, Reading};
use hw_tools::fuzz::{case, run_case, Target};
use hw_tools::fuzz_input::{encode, MAX_OPS};
use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

fn runner(seed: u64) -> TestRunner {
    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&seed.to_le_bytes());
    TestRunner::new_with_rng(Config::default(), TestRng::from_seed(RngAlgorithm::ChaCha, &bytes))
}

fn reading(arg: Option<&String>) -> Reading {
    match arg.map(String::as_str) {
        Some("registers") => Reading::Registers,
        Some("raw") => Reading::Raw,
        _ => usage(),
    }
}

/// Every file of `dirs`, sorted by path, with its bytes.
fn files(dirs: &[String]) -> Vec<(std::path::PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    for dir in dirs {
        let Ok(entries) = std::fs::read_dir(dir) else {
            eprintln!("fuzz-tool: cannot read {dir}");
            std::process::exit(1);
        };
        let mut paths: Vec<_> = entries.flatten().map(|e| e.path()).filter(|p| p.is_file()).collect();
        paths.sort();
        out.extend(paths.into_iter().filter_map(|p| std::fs::read(&p).ok().map(|b| (p, b))));
    }
    out
}

/// FNV-1a of `bytes`: a stable file name for an input.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ *b as u64).wrapping_mul(0x100_0000_01b3))
}

fn usage() -> ! {
    eprintln!(
        "usage: fuzz-tool seed N DIR | generate SECONDS [SEED] | replay registers|raw DIR... | minimize registers|raw OUT DIR...\n       (generate and replay: --edges FILE writes the edges seen)"
    );
    std::process::exit(2)
}

/// Write the indices of the edges seen to `path` (`--edges FILE`), one
/// per line, for `fuzz/edges-by-crate.py`.
fn write_edges(path: Option<&String>, edges: &Edges) {
    let Some(path) = path else { return };
    let text: String = edges.indices().iter().map(|i| format!("{i}\n")).collect();
    if let Err(e) = std::fs::write(path, text) {
        eprintln!("fuzz-tool: cannot write {path}: {e}");
        std::process::exit(1);
    }
}

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let edges_out = match args.iter().position(|a| a == "--edges") {
        Some(i) if i + 1 < args.len() => {
            let path = args.remove(i + 1);
            args.remove(i);
            Some(path)
        }
        Some(_) => usage(),
        None => None,
    };
    let num = |s: Option<&String>| s.and_then(|s| s.parse::<u64>().ok()).unwrap_or_else(|| usage());
    match args.first().map(String::as_str) {
        Some("seed") => {
            let n = num(args.get(1));
            let dir = Path::new(args.get(2).unwrap_or_else(|| usage()));
            if let Err(e) = std::fs::create_dir_all(dir) {
                eprintln!("fuzz-tool: cannot create {}: {e}", dir.display());
                std::process::exit(1);
            }
            let mut r = runner(51);
            let strategy = case(16);
            for i in 0..n {
                let ops = match strategy.new_tree(&mut r) {
                    Ok(t) => t.current(),
                    Err(e) => {
                        eprintln!("fuzz-tool: the generator failed: {e}");
                        std::process::exit(1);
                    }
                };
                let path = dir.join(format!("gen-{i:04}"));
                if let Err(e) = std::fs::write(&path, encode(&ops)) {
                    eprintln!("fuzz-tool: cannot write {}: {e}", path.display());
                    std::process::exit(1);
                }
            }
            println!("fuzz-tool: {n} generated cases in {}", dir.display());
        }
        Some("generate") => {
            let secs = num(args.get(1));
            let seed = args.get(2).map(|s| num(Some(s))).unwrap_or(1);
            let mut r = runner(seed);
            let strategy = case(MAX_OPS);
            let mut edges = Edges::new();
            let start = Instant::now();
            let (mut cases, mut failed) = (0u64, 0u64);
            let mut next_report = Duration::from_secs(60);
            while start.elapsed() < Duration::from_secs(secs) {
                let Ok(tree) = strategy.new_tree(&mut r) else { break };
                // Only what a replay of the case runs counts: its bytes
                // decoded and run, not proptest's generation.
                let bytes = encode(&tree.current());
                edges.discard();
                let ops = Reading::Registers.ops(&bytes);
                if let Err(e) = run_case(&Target::Simulator, &ops) {
                    failed += 1;
                    eprintln!("fuzz-tool: case {cases} failed: {e}");
                }
                cases += 1;
                edges.collect();
                if start.elapsed() >= next_report {
                    println!("generator: {:>5} s {:>8} cases {:>6} edges", next_report.as_secs(), cases, edges.count());
                    next_report += Duration::from_secs(60);
                }
            }
            println!(
                "generator: {} s, {cases} cases, {failed} failed, {} edges of {}",
                start.elapsed().as_secs(),
                edges.count(),
                edges.total()
            );
            write_edges(edges_out.as_ref(), &edges);
        }
        Some("replay") => {
            let reading = reading(args.get(1));
            let mut edges = Edges::new();
            let mut inputs = 0;
            for (f, bytes) in files(&args[2..]) {
                // Only the decoding and running of inputs counts, as in
                // `generate`, not the reading of files.
                edges.discard();
                let ops = reading.ops(&bytes);
                if let Err(e) = run_case(&Target::Simulator, &ops) {
                    eprintln!("fuzz-tool: {} fails: {e}", f.display());
                }
                inputs += 1;
                edges.collect();
            }
            println!("replay: {inputs} inputs, {} edges of {}", edges.count(), edges.total());
            write_edges(edges_out.as_ref(), &edges);
        }
        Some("minimize") => {
            let reading = reading(args.get(1));
            let out = Path::new(args.get(2).unwrap_or_else(|| usage()));
            // Each input's own edges, smallest inputs first.
            let mut runs: Vec<(Vec<u8>, Vec<usize>)> = Vec::new();
            let mut edges = Edges::new();
            for (f, bytes) in files(&args[3..]) {
                let mut own = Edges::new();
                if let Err(e) = run_case(&Target::Simulator, &reading.ops(&bytes)) {
                    eprintln!("fuzz-tool: {} fails (kept out): {e}", f.display());
                    own.discard();
                    continue;
                }
                own.collect();
                edges.merge(&own);
                runs.push((bytes, own.indices()));
            }
            runs.sort_by_key(|(b, _)| b.len());
            let mut covered = vec![false; edges.total()];
            let mut kept = 0;
            if let Err(e) = std::fs::create_dir_all(out) {
                eprintln!("fuzz-tool: cannot create {}: {e}", out.display());
                std::process::exit(1);
            }
            for (bytes, own) in &runs {
                if own.iter().any(|&i| !covered[i]) {
                    own.iter().for_each(|&i| covered[i] = true);
                    let path = out.join(format!("{:016x}", fnv1a(bytes)));
                    if let Err(e) = std::fs::write(&path, bytes) {
                        eprintln!("fuzz-tool: cannot write {}: {e}", path.display());
                        std::process::exit(1);
                    }
                    kept += 1;
                }
            }
            println!("minimize: {kept} of {} inputs keep all {} edges", runs.len(), edges.count());
        }
        _ => usage(),
    }
}
