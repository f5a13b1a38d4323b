//! Every `DN_*` variable the sources, scripts and guide name is declared
//! in `adi::knobs::KNOBS` (the `dn-knobs` crate), every declared one is used somewhere, and
//! `docs/guide/environment.md` is the table generated from it.

use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the repository").to_path_buf()
}

/// Every file of the repository outside `target/` and `.git/`.
fn files() -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut dirs = vec![repo()];
    while let Some(d) = dirs.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else { continue };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                if !p.ends_with("target") && !p.ends_with(".git") {
                    dirs.push(p);
                }
            } else {
                out.push(p);
            }
        }
    }
    out
}

/// The files to read: Rust (up to its first `#[cfg(test)]`, whose
/// examples of wrong names are on purpose), C, shell, and the guide.
fn sources() -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    for p in files() {
        let name = p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let ext = p.extension().map(|x| x.to_string_lossy().into_owned()).unwrap_or_default();
        let keep = matches!(ext.as_str(), "rs" | "c" | "h" | "sh" | "md" | "f90" | "f") || name == "run";
        if !keep || p.ends_with("knobs/src/lib.rs") || p.ends_with("docs/guide/environment.md") {
            continue;
        }
        if ext == "md" && !(p.starts_with(repo().join("docs/guide")) || name == "README.md") {
            continue;
        }
        let Ok(mut text) = std::fs::read_to_string(&p) else { continue };
        if ext == "rs" {
            if let Some(i) = text.find("#[cfg(test)]") {
                text.truncate(i);
            }
        }
        out.push((p, text));
    }
    out
}

/// The `DN_*` names in `text` (not prefixes such as `DN_COLL_`); in code,
/// only those that open a string literal (`"DN_RANK"`, `"DN_RMA=card"`),
/// which are the environment's: the register map's C macros are `DN_*`
/// too.
fn names_in(path: &Path, text: &str) -> Vec<String> {
    let code = path.extension().is_some_and(|x| x == "rs" || x == "c" || x == "h");
    names(text, code)
}

fn names(text: &str, quoted_only: bool) -> Vec<String> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(j) = text[i..].find("DN_") {
        let start = i + j;
        let before_ok = start == 0 || !(b[start - 1].is_ascii_alphanumeric() || b[start - 1] == b'_');
        let mut end = start + 3;
        while end < b.len() && (b[end].is_ascii_uppercase() || b[end].is_ascii_digit() || b[end] == b'_') {
            end += 1;
        }
        let name = &text[start..end];
        let quoted = start > 0 && b[start - 1] == b'"';
        if before_ok && name.len() > 3 && !name.ends_with('_') && (quoted || !quoted_only) {
            out.push(name.to_string());
        }
        i = end.max(start + 3);
    }
    out
}

#[test]
fn every_variable_named_anywhere_is_declared() {
    let mut undeclared = Vec::new();
    for (path, text) in sources() {
        for n in names_in(&path, &text) {
            if adi::knobs::knob(&n).is_none() {
                undeclared.push(format!("{n} ({})", path.strip_prefix(repo()).unwrap_or(&path).display()));
            }
        }
    }
    undeclared.sort();
    undeclared.dedup();
    assert!(
        undeclared.is_empty(),
        "DN_* variables not declared in knobs/src/lib.rs (declare them there, with what they take):\n  {}",
        undeclared.join("\n  ")
    );
}

#[test]
fn every_declared_variable_is_used() {
    let all: Vec<String> = sources().into_iter().flat_map(|(p, t)| names_in(&p, &t)).collect();
    let unused: Vec<&str> = adi::knobs::KNOBS.iter().map(|k| k.name).filter(|n| !all.iter().any(|a| a == n)).collect();
    assert!(unused.is_empty(), "declared in knobs/src/lib.rs but used nowhere: {unused:?}");
}

#[test]
fn the_guide_page_is_the_generated_table() {
    let committed = std::fs::read_to_string(repo().join("docs/guide/environment.md")).unwrap_or_default();
    assert!(
        committed == adi::knobs::guide_page(),
        "docs/guide/environment.md is stale: regenerate it with `cargo run -q -p adi --bin gen-env-page > docs/guide/environment.md`"
    );
}

/// Every `DN_*` variable is read through `dn_knobs` (issue 49): no other
/// code reads one from the environment itself, where its value would
/// escape the check against its declaration. Tests are included; the
/// pattern is spelt in two halves so that this file does not match.
#[test]
fn no_code_reads_a_variable_around_the_declarations() {
    let patterns = [concat!("env::var(", "\"DN_"), concat!("var_os(", "\"DN_")];
    let mut found = Vec::new();
    for p in files() {
        if p.extension().is_none_or(|x| x != "rs") || p.ends_with("knobs/src/lib.rs") {
            continue;
        }
        let text = std::fs::read_to_string(&p).unwrap_or_default();
        for (i, line) in text.lines().enumerate() {
            if patterns.iter().any(|pat| line.contains(pat)) {
                found.push(format!("{}:{}: {}", p.strip_prefix(repo()).unwrap_or(&p).display(), i + 1, line.trim()));
            }
        }
    }
    assert!(found.is_empty(), "read these through adi::knobs (dn_knobs) instead:\n  {}", found.join("\n  "));
}

/// The DPDK backend's frame range is the one declared for `DN_DPDK_FRAME`.
#[cfg(feature = "dpdk")]
#[test]
fn the_frame_range_is_the_declared_one() {
    let r = adi::backend::dpdk::FRAME_RANGE;
    assert_eq!(
        adi::knobs::knob(adi::backend::dpdk::FRAME_ENV).map(|k| k.takes),
        Some(adi::knobs::Takes::Integer(*r.start() as u64, *r.end() as u64))
    );
}
