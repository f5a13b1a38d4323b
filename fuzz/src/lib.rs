//! What the AFL++ targets share: running one input as a fuzz case, and
//! reading the edge map the instrumentation fills, so that the old
//! generator and the guided fuzzer are measured by the same counter.

use hw_tools::fuzz::{run_case, Op, Target};

/// Which reading of the input bytes a target uses.
#[derive(Clone, Copy, Debug)]
pub enum Reading {
    /// Structured operations ([`hw_tools::fuzz_input::decode`]).
    Registers,
    /// Raw words, descriptors and doorbells ([`hw_tools::fuzz_input::decode_raw`]).
    Raw,
}

impl Reading {
    /// The operations `bytes` stand for.
    pub fn ops(self, bytes: &[u8]) -> Vec<Op> {
        match self {
            Reading::Registers => hw_tools::fuzz_input::decode(bytes),
            Reading::Raw => hw_tools::fuzz_input::decode_raw(bytes),
        }
    }
}

/// Run one input; a violated invariant panics, which AFL++ records as a
/// crash (with the input that caused it).
pub fn run(reading: Reading, bytes: &[u8]) {
    let ops = reading.ops(bytes);
    if ops.is_empty() {
        return;
    }
    if let Err(e) = run_case(&Target::Simulator, &ops) {
        panic!("invariant violated: {e}\noperations: {ops:#?}");
    }
}

extern "C" {
    // The AFL++ runtime's edge map and its length (afl-compiler-rt): every
    // instrumented edge has an index below `__afl_final_loc`, and its byte
    // in the map counts the hits since the map was last cleared. Outside
    // afl-fuzz the map is the runtime's own static array.
    static mut __afl_area_ptr: *mut u8;
    static __afl_final_loc: u32;
}

/// The edges seen so far across runs, as AFL++ counts them (a map entry
/// hit at least once).
pub struct Edges {
    seen: Vec<bool>,
}

impl Default for Edges {
    fn default() -> Self {
        Edges::new()
    }
}

impl Edges {
    /// No edge seen yet; clears the runtime's map.
    pub fn new() -> Edges {
        let mut e = Edges { seen: Vec::new() };
        e.collect();
        e.seen.iter_mut().for_each(|s| *s = false);
        e
    }

    /// Fold the runtime's map into the edges seen and clear it.
    pub fn collect(&mut self) {
        // SAFETY: the AFL++ runtime defines both symbols (the binary is
        // built by `cargo afl`), and the map holds at least
        // `__afl_final_loc` bytes (the runtime sizes it so at start-up).
        // Only this thread reads or clears it, between cases, when no other
        // thread of the case is running (run_case has joined them).
        let map = unsafe {
            let len = __afl_final_loc as usize;
            let ptr = __afl_area_ptr;
            if ptr.is_null() {
                return;
            }
            std::slice::from_raw_parts_mut(ptr, len)
        };
        if self.seen.len() < map.len() {
            self.seen.resize(map.len(), false);
        }
        for (s, m) in self.seen.iter_mut().zip(map.iter_mut()) {
            *s |= *m != 0;
            *m = 0;
        }
    }

    /// Clear the runtime's map without counting what is in it (the
    /// generator's own code, run before a case).
    pub fn discard(&mut self) {
        let seen = std::mem::take(&mut self.seen);
        self.collect();
        self.seen = seen;
    }

    /// Add the edges `other` saw.
    pub fn merge(&mut self, other: &Edges) {
        if self.seen.len() < other.seen.len() {
            self.seen.resize(other.seen.len(), false);
        }
        for (s, o) in self.seen.iter_mut().zip(&other.seen) {
            *s |= *o;
        }
    }

    /// The indices of the edges seen.
    pub fn indices(&self) -> Vec<usize> {
        self.seen.iter().enumerate().filter(|(_, s)| **s).map(|(i, _)| i).collect()
    }

    /// How many edges were seen.
    pub fn count(&self) -> usize {
        self.seen.iter().filter(|s| **s).count()
    }

    /// How many edges the binary has.
    pub fn total(&self) -> usize {
        self.seen.len()
    }
}
