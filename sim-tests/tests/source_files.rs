//! Files by job (issue 49, item 4): no Rust source file outside tests is
//! over 1,000 lines. A file that grows past it mixes jobs again; split it
//! into child modules named for what they hold.

use std::path::{Path, PathBuf};

use sim_tests::repo;

/// Most lines a source file may have.
const MOST_LINES: usize = 1000;

/// Every `.rs` file under `dir`, except test directories and build output.
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let p = e.path();
        let name = e.file_name();
        let name = name.to_string_lossy();
        if p.is_dir() {
            if !matches!(name.as_ref(), "target" | "tests" | "benches" | ".git") && !name.starts_with('.') {
                sources(&p, out);
            }
        } else if name.ends_with(".rs") {
            out.push(p);
        }
    }
}

#[test]
fn no_source_file_outside_tests_is_over_1000_lines() {
    let root = repo();
    let mut files = Vec::new();
    sources(&root, &mut files);
    assert!(files.len() > 100, "found only {} source files under {}", files.len(), root.display());
    let mut long: Vec<(usize, String)> = files
        .iter()
        .filter_map(|f| {
            let lines = std::fs::read_to_string(f).ok()?.lines().count();
            let rel = f.strip_prefix(&root).unwrap_or(f).display().to_string();
            (lines > MOST_LINES).then_some((lines, rel))
        })
        .collect();
    long.sort();
    assert!(long.is_empty(), "source files over {MOST_LINES} lines (split them by job): {long:?}");
}

/// The declarations of `text` that other crates see: `pub fn`, `pub type`
/// and `pub` fields (not `pub(crate)` or `pub(super)`), and `type Err`,
/// each up to its body or end, before the file's unit tests.
fn public_signatures(text: &str) -> Vec<String> {
    let text = text.split("#[cfg(test)]").next().unwrap_or(text);
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("pub ").or_else(|| rest.find("type Err")) {
        let sig = &rest[at..];
        let end = sig.find(['{', ';']).map_or(sig.len(), |e| e + 1);
        // A field ends at its comma; a signature holds commas, so fields
        // are cut at the first line end instead.
        let sig = &sig[..end];
        out.push(sig.split_whitespace().collect::<Vec<_>>().join(" "));
        rest = &rest[at + 4..];
    }
    out
}

/// Whether a signature returns or holds a `Result` whose error is a bare
/// `String`, or names `String` as a `FromStr` error.
fn has_string_error(sig: &str) -> bool {
    if sig.starts_with("type Err = String") {
        return true;
    }
    let mut rest = sig;
    while let Some(at) = rest.find("Result<") {
        // The error is the last top-level argument of Result<..>.
        let inner = &rest[at + 7..];
        let (mut depth, mut last_comma, mut close) = (0i32, None, None);
        for (i, c) in inner.char_indices() {
            match c {
                '<' | '(' | '[' => depth += 1,
                '>' | ')' | ']' if depth == 0 => {
                    close = Some(i);
                    break;
                }
                '>' | ')' | ']' => depth -= 1,
                ',' if depth == 0 => last_comma = Some(i),
                _ => {}
            }
        }
        if let (Some(c), Some(e)) = (last_comma, close) {
            if inner[c + 1..e].trim() == "String" {
                return true;
            }
        }
        rest = inner;
    }
    false
}

/// Issue 49, item 6: no public API of the stack gives its errors as a bare
/// `String`: each has an error type that says what broke (and carries the
/// figures), which a caller can match on. Binaries are not APIs.
#[test]
fn no_public_api_returns_a_string_as_its_error() {
    assert!(has_string_error("pub fn parse(s: &str) -> Result<u32, String> {"));
    assert!(has_string_error("pub request: Result<SpawnRequest, String>,"));
    assert!(has_string_error("pub check: fn(&LaunchPlan<'_>) -> Result<(), String>, }"));
    assert!(!has_string_error("pub fn name(x: Result<String, E>) -> Result<Vec<String>, KnobError> {"));
    let root = repo();
    let mut files = Vec::new();
    sources(&root, &mut files);
    let mut found = Vec::new();
    for f in files.iter().filter(|f| {
        let p = f.to_string_lossy();
        !p.contains("/src/bin/") && !p.ends_with("/main.rs") && !p.ends_with("build.rs")
    }) {
        let Ok(text) = std::fs::read_to_string(f) else { continue };
        for sig in public_signatures(&text).into_iter().filter(|s| !s.starts_with("pub(")) {
            if has_string_error(&sig) {
                found.push(format!("{}: {sig}", f.strip_prefix(&root).unwrap_or(f).display()));
            }
        }
    }
    assert!(found.is_empty(), "public APIs with a String error (give them an error type):\n{}", found.join("\n"));
}

/// The modules of the `mpi` crate's core (issue 49, item 2): the status,
/// the errors, the datatypes, info objects, the compute meter, the
/// settings read at `MPI_Init`, the library's lock and the threads that
/// act for the program behind it. Every other module builds on them; they
/// import no module outside the core (the crate root's constants and type
/// names are not modules), and each imports only those listed before it
/// (itself aside), so the core has no cycle either.
const MPI_CORE: &[&str] = &[
    "status",
    "error",
    "datatype",
    "info",
    "compute",
    "config",
    "locked",
    "watcher",
    "keepalive",
    "outside",
    "context",
    "attr",
    "members",
    "request",
];

/// The modules of the crate that `text` names through `crate::` paths,
/// outside comments and its unit tests.
fn crate_modules_named(text: &str, is_module: impl Fn(&str) -> bool) -> Vec<String> {
    let text = text.split("#[cfg(test)]").next().unwrap_or(text);
    let mut out = Vec::new();
    for line in text.lines().filter(|l| !l.trim_start().starts_with("//")) {
        let mut rest = line;
        while let Some(at) = rest.find("crate::") {
            rest = &rest[at + 7..];
            let names: Vec<&str> = match rest.strip_prefix('{') {
                // `crate::{a::X, b}`: the first segment of each path.
                Some(group) => group
                    .split('}')
                    .next()
                    .unwrap_or("")
                    .split(',')
                    .filter_map(|p| p.trim().split("::").next())
                    .collect(),
                None => rest.split(|c: char| !(c.is_alphanumeric() || c == '_')).take(1).collect(),
            };
            out.extend(names.into_iter().filter(|n| is_module(n)).map(String::from));
        }
    }
    out
}

#[test]
fn the_mpi_core_imports_no_module_above_it() {
    let src = repo().join("mpi/src");
    let is_module = |n: &str| !n.is_empty() && (src.join(format!("{n}.rs")).is_file() || src.join(n).is_dir());
    assert_eq!(crate_modules_named("use crate::{comm::Status, Rank};\nx(crate::io::f)", is_module), ["comm", "io"]);
    let mut above = Vec::new();
    for (k, m) in MPI_CORE.iter().enumerate() {
        let mut files = Vec::new();
        let file = src.join(format!("{m}.rs"));
        if file.is_file() {
            files.push(file);
        }
        sources(&src.join(m), &mut files);
        assert!(!files.is_empty(), "mpi/src/{m} is gone: update MPI_CORE");
        for f in files {
            let text = std::fs::read_to_string(&f).unwrap_or_default();
            for n in crate_modules_named(&text, is_module) {
                if n != *m && !MPI_CORE[..k].contains(&n.as_str()) {
                    above.push(format!("{} uses crate::{n}", f.strip_prefix(&src).unwrap_or(&f).display()));
                }
            }
        }
    }
    assert!(
        above.is_empty(),
        "the core of mpi imports from above it (or from later in MPI_CORE):\n{}",
        above.join("\n")
    );
}

/// Each top-level module of the crate at `src` and the modules it names
/// (`crate::` paths, and `super::` paths in a file right under `src`,
/// where `super` is the crate root), itself and the crate root aside.
fn module_graph(src: &std::path::Path) -> std::collections::BTreeMap<String, std::collections::BTreeSet<String>> {
    let is_module = |n: &str| !n.is_empty() && (src.join(format!("{n}.rs")).is_file() || src.join(n).is_dir());
    let mut graph = std::collections::BTreeMap::new();
    let Ok(entries) = std::fs::read_dir(src) else { return graph };
    for e in entries.flatten() {
        let path = e.path();
        let name = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        if name == "lib" || name == "main" || name == "bin" || !is_module(&name) {
            continue;
        }
        let mut files = Vec::new();
        if path.is_dir() {
            sources(&path, &mut files);
        } else {
            files.push(path.clone());
        }
        let deps: &mut std::collections::BTreeSet<String> = graph.entry(name.clone()).or_default();
        for f in files {
            let mut text = std::fs::read_to_string(&f).unwrap_or_default();
            if f.parent() == Some(src) {
                text = text.replace("super::", "crate::");
            }
            deps.extend(crate_modules_named(&text, is_module).into_iter().filter(|n| *n != name));
        }
    }
    graph
}

/// A cycle of `graph` (its modules in order, the first again at the end),
/// if it has one.
fn a_cycle(graph: &std::collections::BTreeMap<String, std::collections::BTreeSet<String>>) -> Option<Vec<String>> {
    // 0: not seen; 1: on the path being explored; 2: done, in no cycle.
    let mut state: std::collections::BTreeMap<&str, u8> = std::collections::BTreeMap::new();
    fn visit<'g>(
        m: &'g str,
        graph: &'g std::collections::BTreeMap<String, std::collections::BTreeSet<String>>,
        state: &mut std::collections::BTreeMap<&'g str, u8>,
        path: &mut Vec<&'g str>,
    ) -> Option<Vec<String>> {
        match state.get(m) {
            Some(2) => return None,
            Some(1) => {
                let from = path.iter().position(|p| *p == m).unwrap_or(0);
                let mut cycle: Vec<String> = path[from..].iter().map(|s| s.to_string()).collect();
                cycle.push(m.to_string());
                return Some(cycle);
            }
            _ => {}
        }
        state.insert(m, 1);
        path.push(m);
        for d in graph.get(m).into_iter().flatten() {
            if let Some(c) = visit(d, graph, state, path) {
                return Some(c);
            }
        }
        path.pop();
        state.insert(m, 2);
        None
    }
    graph.keys().find_map(|m| visit(m, graph, &mut state, &mut Vec::new()))
}

/// Issue 49, item 2: the modules of `mpi` form no cycle. The check: every
/// `crate::` path of each top-level module (outside comments and unit
/// tests) is an edge, and a depth-first search finds no way back.
#[test]
fn mpi_has_no_module_cycle() {
    let toy = |edges: &[(&str, &str)]| {
        let mut g: std::collections::BTreeMap<String, std::collections::BTreeSet<String>> = Default::default();
        for (a, b) in edges {
            g.entry(a.to_string()).or_default().insert(b.to_string());
            g.entry(b.to_string()).or_default();
        }
        g
    };
    assert_eq!(a_cycle(&toy(&[("a", "b"), ("b", "c"), ("c", "b")])), Some(vec!["b".into(), "c".into(), "b".into()]));
    assert_eq!(a_cycle(&toy(&[("a", "b"), ("a", "c"), ("b", "c")])), None);
    let graph = module_graph(&repo().join("mpi/src"));
    assert!(graph.len() > 20 && graph.contains_key("comm") && graph["comm"].contains("request"), "{graph:?}");
    if let Some(cycle) = a_cycle(&graph) {
        panic!("mpi's modules import each other in a cycle: {}", cycle.join(" -> "));
    }
}

/// Issue 49, item 2: the modules of `capi` form no cycle either. capi's
/// modules see each other by bare name (`use crate::*` brings the module
/// names in), and add methods to the crate root's `State` (`impl State` in
/// `datatype` gives `st.layout(..)`), so on top of `crate::` paths the
/// check counts bare `module::` paths and calls of the `State` methods a
/// module defines. The crate root itself (`State`, `with_state`, `Fail`,
/// the handle tables' entries) is the layer every module stands on, and is
/// left out.
#[test]
fn capi_has_no_module_cycle() {
    let src = repo().join("capi/src");
    let mut graph = module_graph(&src);
    let is_module = |n: &str| !n.is_empty() && (src.join(format!("{n}.rs")).is_file() || src.join(n).is_dir());
    assert_eq!(bare_modules_named("x = env::f(); y::env::g(); a(datatype::X)", is_module), ["env", "datatype"]);
    let texts: std::collections::BTreeMap<String, String> = graph
        .keys()
        .map(|m| {
            let mut files = Vec::new();
            if src.join(format!("{m}.rs")).is_file() {
                files.push(src.join(format!("{m}.rs")));
            }
            sources(&src.join(m), &mut files);
            let text: String = files
                .iter()
                .map(|f| {
                    let t = std::fs::read_to_string(f).unwrap_or_default();
                    let t = t.split("#[cfg(test)]").next().unwrap_or("").to_string();
                    t.lines().filter(|l| !l.trim_start().starts_with("//")).collect::<Vec<_>>().join("\n")
                })
                .collect();
            (m.clone(), text)
        })
        .collect();
    let methods: Vec<(String, String)> =
        texts.iter().flat_map(|(m, t)| state_methods(t).into_iter().map(move |f| (f, m.clone()))).collect();
    assert!(methods.iter().any(|(f, m)| f == "layout" && m == "datatype"), "{methods:?}");
    for (m, text) in &texts {
        let deps = graph.entry(m.clone()).or_default();
        deps.extend(bare_modules_named(text, is_module).into_iter().filter(|n| n != m));
        for (f, owner) in &methods {
            if owner != m && [format!("st.{f}("), format!("self.{f}(")].iter().any(|call| text.contains(call.as_str()))
            {
                deps.insert(owner.clone());
            }
        }
    }
    assert!(graph.len() > 30 && graph["p2p"].contains("bsend") && graph["win"].contains("datatype"), "{graph:?}");
    if let Some(cycle) = a_cycle(&graph) {
        panic!("capi's modules reach each other in a cycle: {}", cycle.join(" -> "));
    }
}

/// The modules `text` names by bare paths (`env::f`, not `x::env::f`).
fn bare_modules_named(text: &str, is_module: impl Fn(&str) -> bool) -> Vec<String> {
    let mut out = Vec::new();
    for (at, _) in text.match_indices("::") {
        let before = &text[..at];
        let start = before.rfind(|c: char| !(c.is_alphanumeric() || c == '_')).map_or(0, |i| i + 1);
        let name = &before[start..];
        let qualified = before[..start].ends_with("::");
        if !qualified && is_module(name) && !out.iter().any(|o: &String| o == name) {
            out.push(name.to_string());
        }
    }
    out
}

/// The `pub(crate)` methods `text` adds to the crate root's `State`.
fn state_methods(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for block in text.split("\nimpl State {").skip(1) {
        let body = block.split("\n}").next().unwrap_or("");
        for part in body.split("pub(crate) ").skip(1) {
            let part = part.strip_prefix("unsafe ").unwrap_or(part);
            if let Some(name) = part.strip_prefix("fn ") {
                out.push(name.split(|c: char| !(c.is_alphanumeric() || c == '_')).next().unwrap_or("").to_string());
            }
        }
    }
    out
}
