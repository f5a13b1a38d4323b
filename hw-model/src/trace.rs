//! Device traces in the Chrome trace-event JSON format, so a run can be
//! opened in Perfetto (ui.perfetto.dev) or chrome://tracing.
//!
//! Each node is a process (`pid` = node number); its lanes are the slots'
//! command engines (`tid` = slot), the link's send and receive directions,
//! and the IVS rings (counter tracks of NWA and NRA). Timestamps are
//! simulated microseconds printed from integer picoseconds, so two runs of
//! the same job produce identical bytes.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use crate::time::SimTime;

/// Lane (`tid`) of a node's link transmit direction.
pub const TID_LINK_TX: u32 = 100;
/// Lane (`tid`) of a node's link receive direction.
pub const TID_LINK_RX: u32 = 101;

/// First lane (`tid`) of the collective engine: slot `s`, completion slot
/// `k` is `TID_SCHED + s * SCHED_SLOTS + k`.
pub const TID_SCHED: u32 = 200;

/// An argument value.
#[derive(Clone, Debug)]
pub enum Arg<'a> {
    /// A number.
    U(u64),
    /// A string.
    S(&'a str),
}

/// A trace being written.
pub struct Trace {
    out: BufWriter<File>,
    first: bool,
    error: Option<std::io::Error>,
    events: u64,
    /// Schedule lanes named so far (named on first use, so traces without
    /// device schedules have none).
    sched_lanes: std::collections::BTreeSet<(u32, u32)>,
}

fn escape(s: &str, out: &mut String) {
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
}

impl Trace {
    /// Create `path` and write the metadata naming nodes and lanes.
    pub fn create(path: &Path, nodes: u16, slots: u16) -> std::io::Result<Trace> {
        let file = File::create(path)?;
        let mut t = Trace {
            out: BufWriter::with_capacity(1 << 16, file),
            first: true,
            error: None,
            events: 0,
            sched_lanes: Default::default(),
        };
        t.raw("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n");
        for n in 0..nodes as u32 {
            t.meta("process_name", n, 0, &format!("node {n}"));
            for s in 0..slots as u32 {
                t.meta("thread_name", n, s, &format!("slot {s} commands"));
            }
            t.meta("thread_name", n, TID_LINK_TX, "link tx");
            t.meta("thread_name", n, TID_LINK_RX, "link rx");
        }
        Ok(t)
    }

    /// The lane of completion slot `k` of slot `slot` on node `pid`
    /// (collective engine), named the first time it is used.
    pub fn sched_lane(&mut self, pid: u32, slot: u32, k: u32) -> u32 {
        let tid = TID_SCHED + slot * fpga_regs::sched::SCHED_SLOTS as u32 + k;
        if self.sched_lanes.insert((pid, tid)) {
            self.meta("thread_name", pid, tid, &format!("slot {slot} schedule {k}"));
        }
        tid
    }

    fn raw(&mut self, s: &str) {
        if self.error.is_none() {
            if let Err(e) = self.out.write_all(s.as_bytes()) {
                self.error = Some(e);
            }
        }
    }

    fn event(&mut self, body: &str) {
        let sep = if self.first { "" } else { ",\n" };
        self.first = false;
        self.events += 1;
        let line = format!("{sep}{{{body}}}");
        self.raw(&line);
    }

    fn meta(&mut self, name: &str, pid: u32, tid: u32, value: &str) {
        let mut v = String::new();
        escape(value, &mut v);
        self.event(&format!(
            "\"name\":\"{name}\",\"ph\":\"M\",\"pid\":{pid},\"tid\":{tid},\"args\":{{\"name\":\"{v}\"}}"
        ));
    }

    fn args(args: &[(&str, Arg)]) -> String {
        let mut s = String::from("{");
        for (i, (k, v)) in args.iter().enumerate() {
            if i > 0 {
                s.push(',');
            }
            s.push('"');
            escape(k, &mut s);
            s.push_str("\":");
            match v {
                Arg::U(u) => s.push_str(&u.to_string()),
                Arg::S(t) => {
                    s.push('"');
                    escape(t, &mut s);
                    s.push('"');
                }
            }
        }
        s.push('}');
        s
    }

    /// A span on lane `(pid, tid)`.
    #[allow(clippy::too_many_arguments)]
    pub fn span(
        &mut self,
        name: &str,
        cat: &str,
        pid: u32,
        tid: u32,
        start: SimTime,
        end: SimTime,
        args: &[(&str, Arg)],
    ) {
        let mut n = String::new();
        escape(name, &mut n);
        let body = format!(
            "\"name\":\"{n}\",\"cat\":\"{cat}\",\"ph\":\"X\",\"pid\":{pid},\"tid\":{tid},\"ts\":{},\"dur\":{},\"args\":{}",
            start.us_string(),
            end.since(start).us_string(),
            Trace::args(args)
        );
        self.event(&body);
    }

    /// An instant event on lane `(pid, tid)`.
    pub fn instant(&mut self, name: &str, cat: &str, pid: u32, tid: u32, at: SimTime, args: &[(&str, Arg)]) {
        let mut n = String::new();
        escape(name, &mut n);
        let body = format!(
            "\"name\":\"{n}\",\"cat\":\"{cat}\",\"ph\":\"i\",\"s\":\"t\",\"pid\":{pid},\"tid\":{tid},\"ts\":{},\"args\":{}",
            at.us_string(),
            Trace::args(args)
        );
        self.event(&body);
    }

    /// A counter sample (e.g. ring pointers) for process `pid`.
    pub fn counter(&mut self, name: &str, pid: u32, at: SimTime, values: &[(&str, u64)]) {
        let mut n = String::new();
        escape(name, &mut n);
        let args: Vec<(&str, Arg)> = values.iter().map(|(k, v)| (*k, Arg::U(*v))).collect();
        let body = format!(
            "\"name\":\"{n}\",\"ph\":\"C\",\"pid\":{pid},\"ts\":{},\"args\":{}",
            at.us_string(),
            Trace::args(&args)
        );
        self.event(&body);
    }

    /// Events written so far.
    pub fn events(&self) -> u64 {
        self.events
    }

    /// Close the JSON document and flush.
    pub fn finish(self) -> std::io::Result<()> {
        self.finish_with(&[])
    }

    /// [`Trace::finish`], with `meta` as the trace's `otherData` (what the
    /// trace viewers show as its metadata: how the job was run). It comes
    /// last, on a line of its own, so that traces of one job run in
    /// different ways compare equal once it is left out.
    pub fn finish_with(mut self, meta: &[(String, String)]) -> std::io::Result<()> {
        self.raw("\n]");
        if !meta.is_empty() {
            let mut line = String::from(",\n\"otherData\":{");
            for (i, (k, v)) in meta.iter().enumerate() {
                if i > 0 {
                    line.push(',');
                }
                line.push('"');
                escape(k, &mut line);
                line.push_str("\":\"");
                escape(v, &mut line);
                line.push('"');
            }
            line.push('}');
            self.raw(&line);
        }
        self.raw("}\n");
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        self.out.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trace_is_valid_json() {
        let path = std::env::temp_dir().join(format!("dn-trace-test-{}.json", std::process::id()));
        let mut t = Trace::create(&path, 2, 1).unwrap();
        t.span(
            "VL \"128\"",
            "cmd",
            0,
            0,
            SimTime(1000),
            SimTime(681_000),
            &[("bytes", Arg::U(128)), ("to", Arg::S("pw"))],
        );
        t.instant("doorbell", "host", 0, 0, SimTime(0), &[]);
        t.counter("ring n0.s0<-1", 0, SimTime(5), &[("nwa", 64), ("nra", 0)]);
        t.finish().unwrap();
        let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let ev = v["traceEvents"].as_array().unwrap();
        assert!(ev.iter().any(|e| e["ph"] == "X" && e["dur"].as_f64() == Some(0.68)));
        std::fs::remove_file(&path).unwrap();
    }
}
