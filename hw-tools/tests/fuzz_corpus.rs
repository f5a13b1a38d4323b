//! The coverage-guided fuzzer's corpus and regressions (`fuzz/`,
//! `scripts/fuzz.sh`), replayed without AFL++: every kept input must still
//! keep every invariant. This is the fuzzer's smoke run in CI; an input
//! that once found a fault lives in `fuzz/regressions/TARGET` and is
//! replayed here for good.

use std::path::{Path, PathBuf};

use hw_tools::fuzz::{run_case, Op, Target};
use hw_tools::fuzz_input::{decode, decode_raw};

fn inputs(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.path())
                .filter(|p| p.is_file() && !p.file_name().is_some_and(|n| n.to_string_lossy().starts_with('.')))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

fn replay(target: &str, read: fn(&[u8]) -> Vec<Op>) -> usize {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz");
    let mut n = 0;
    let mut failures = Vec::new();
    for dir in ["corpus", "regressions"] {
        for f in inputs(&root.join(dir).join(target)) {
            let bytes = std::fs::read(&f).unwrap();
            if let Err(e) = run_case(&Target::Simulator, &read(&bytes)) {
                failures.push(format!("{}: {e}", f.display()));
            }
            n += 1;
        }
    }
    assert!(failures.is_empty(), "{} of {n} inputs fail:\n{}", failures.len(), failures.join("\n"));
    n
}

#[test]
fn the_registers_corpus_keeps_every_invariant() {
    let n = replay("registers", decode);
    assert!(n >= 50, "fuzz/corpus/registers has only {n} inputs");
}

#[test]
fn the_raw_corpus_keeps_every_invariant() {
    let n = replay("raw", decode_raw);
    assert!(n >= 10, "fuzz/corpus/raw has only {n} inputs");
}
