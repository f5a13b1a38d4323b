//! Host profiles: what the host side costs (uncached reads, write-combined
//! bursts, copies, library work) and the device timing, loaded from JSON.
//!
//! Two profiles are built in:
//!
//! * `p4-2003` — the paper's host (seed 004 Table 1: Pentium 4 2.6 GHz,
//!   PC1600 DDR, WW write-combining, PW uncachable, DIMMnet-2 FPGA at
//!   100 MHz, InfiniBand 4X). Calibrated on Table 2; see `docs/CALIBRATION.md`.
//! * `modern` — a present-day host with the same device, for what-if runs.
//!
//! Any other profile is a JSON file with the same fields (unknown fields are
//! refused, so a typo is an error rather than a silently ignored setting).

use serde::{Deserialize, Serialize};

use simlink::simctl::{HostCost, COST_SLOTS};

use crate::time::SimTime;

/// Host-side costs, in nanoseconds (copies in ns per byte).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostCosts {
    /// One uncached 8-byte load from UR, LLCM or PW.
    pub uc_read_ns: f64,
    /// One uncached 8-byte store to UR or LLCM.
    pub uc_write_ns: f64,
    /// One write-combined 64-byte burst into WW.
    pub wc_line_ns: f64,
    /// Draining write-combining buffers before a doorbell (sfence).
    pub wc_flush_ns: f64,
    /// Host memory copy, per byte.
    pub copy_ns_per_byte: f64,
    /// One MPI-layer call (entry, argument checks, exit), whatever it does:
    /// also a `test` or `iprobe` that finds nothing.
    pub mpi_call_ns: f64,
    /// MPI-layer request processing, charged once when a point-to-point
    /// operation starts and once when it completes.
    pub mpi_request_ns: f64,
    /// One ADI operation (build or parse a control packet, dispatch it).
    pub adi_op_ns: f64,
    /// Creating and completing one request.
    pub request_ns: f64,
    /// Examining one queue element while matching.
    pub match_step_ns: f64,
    /// One progress-engine pass that finds work.
    pub progress_ns: f64,
    /// How the host reads PW (seed 004 §8.2: uncachable, 8-byte loads).
    #[serde(default)]
    pub pw_access: PwAccess,
    /// How the host stores into WW (seed 004 §8.2: `memcpy`).
    #[serde(default)]
    pub ww_store: WwStore,
    /// `PwAccess::CachedClflush`: one 64-byte line fill from PW.
    #[serde(default)]
    pub pw_line_fill_ns: f64,
    /// `PwAccess::CachedClflush`: one CLFLUSH of a PW line before it is
    /// read again (the device rewrites PW behind the cache).
    #[serde(default)]
    pub clflush_ns: f64,
    /// `WwStore::Sse2`: one 64-byte WW line written with 16-byte SSE2 stores.
    #[serde(default)]
    pub wc_line_sse2_ns: f64,
    /// For `--compute measured` (SimGrid's simulate-computation): how many
    /// nanoseconds of this host's time one nanosecond of computation
    /// measured on the machine running the simulation is (the profile's
    /// host is this much slower; 1 when absent).
    #[serde(default = "one")]
    pub compute_scale: f64,
    /// One contiguous file access of MPI-IO: the system call and the file
    /// system's work, with the data in the page cache (1,000 ns when absent).
    #[serde(default = "io_op_default")]
    pub io_op_ns: f64,
    /// Moving one byte between a buffer and the page cache (0.1 ns when absent).
    #[serde(default = "io_byte_default")]
    pub io_ns_per_byte: f64,
}

fn one() -> f64 {
    1.0
}

fn io_op_default() -> f64 {
    1000.0
}

fn io_byte_default() -> f64 {
    0.1
}

/// How the host reads the prefetch window (seed 004 §8.2–8.3: the paper
/// measured `Uncached8` and names SSE2 and CLFLUSH as the next steps).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PwAccess {
    /// PW uncachable, 8-byte loads: `uc_read_ns` per 8 bytes (the paper's).
    #[default]
    Uncached8,
    /// PW uncachable, 16-byte SSE2 loads: `uc_read_ns` per 16 bytes.
    Uncached16,
    /// PW cacheable: one line fill per 64 bytes, and a CLFLUSH of each
    /// line before the device's next write is read
    /// (`pw_line_fill_ns + clflush_ns` per 64 bytes, charged per 8 bytes).
    CachedClflush,
}

/// How the host writes the write window.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WwStore {
    /// `memcpy` into write-combined WW: `wc_line_ns` per 64-byte line (the paper's).
    #[default]
    Memcpy,
    /// 16-byte SSE2 stores: `wc_line_sse2_ns` per line.
    Sse2,
}

impl HostCosts {
    /// The cost of one `c`, in ns (ns per byte for copies); its JSON key is
    /// [`HostCost::key`].
    pub fn ns(&self, c: HostCost) -> f64 {
        match c {
            HostCost::UcRead => self.uc_read_ns,
            HostCost::UcWrite => self.uc_write_ns,
            HostCost::WcLine => match self.ww_store {
                WwStore::Memcpy => self.wc_line_ns,
                WwStore::Sse2 => self.wc_line_sse2_ns,
            },
            HostCost::WcFlush => self.wc_flush_ns,
            HostCost::CopyByte => self.copy_ns_per_byte,
            HostCost::MpiCall => self.mpi_call_ns,
            HostCost::AdiOp => self.adi_op_ns,
            HostCost::Request => self.request_ns,
            HostCost::MatchStep => self.match_step_ns,
            HostCost::Progress => self.progress_ns,
            HostCost::MpiRequest => self.mpi_request_ns,
            HostCost::ComputeScale => self.compute_scale,
            HostCost::IoOp => self.io_op_ns,
            HostCost::IoByte => self.io_ns_per_byte,
            HostCost::PwRead => match self.pw_access {
                PwAccess::Uncached8 => self.uc_read_ns,
                PwAccess::Uncached16 => self.uc_read_ns / 2.0,
                PwAccess::CachedClflush => (self.pw_line_fill_ns + self.clflush_ns) / 8.0,
            },
        }
    }
}

/// Device timing, in device cycles unless the name says otherwise.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DeviceTiming {
    /// Controller clock (seed 004 Table 1: 100 MHz).
    pub clock_mhz: f64,
    /// Doorbell to decoded descriptor.
    pub fetch_cycles: u64,
    /// Command engine work per command after decode.
    pub exec_cycles: u64,
    /// WW/PW internal data path, bytes per cycle.
    pub window_bytes_per_cycle: u64,
    /// SO-DIMM access latency per contiguous segment.
    pub sodimm_latency_cycles: u64,
    /// SO-DIMM bandwidth, bytes per cycle (64-bit DDR at 100 MHz = 16).
    pub sodimm_bytes_per_cycle: u64,
    /// Network-side send processing per packet (transport layer in the FPGA).
    pub nic_tx_cycles: u64,
    /// Network-side receive processing per packet.
    pub nic_rx_cycles: u64,
    /// Link data rate, bytes per cycle (InfiniBand 4X SDR: 8 Gb/s = 10 B per 10 ns).
    pub link_bytes_per_cycle: u64,
    /// Link latency: SerDes on both sides plus the cable.
    pub link_latency_cycles: u64,
    /// Extra latency through the switch (fabrics of more than two nodes).
    pub switch_latency_cycles: u64,
    /// Bytes of link-level framing per packet (InfiniBand LRH+BTH+ICRC+VCRC = 26).
    pub wire_overhead_bytes: u64,
    /// Largest packet payload on the wire; longer RVS/RVL transfers are split.
    pub mtu_bytes: u64,
    /// Same-node delivery through the controller.
    pub loopback_cycles: u64,
    /// Writing a completion entry or a ring pointer into UR/LLCM.
    pub status_write_cycles: u64,
    /// Collective engine reduction unit (ours, an assumption: the papers
    /// have no such unit): bytes combined per cycle, as a 64-bit ALU
    /// beside the 64-bit SO-DIMM port would.
    pub reduce_bytes_per_cycle: u64,
    /// Reduction unit pipeline latency per REDUCE entry (assumption).
    pub reduce_latency_cycles: u64,
    /// Atomic unit (ours, map 1.3; an assumption like the reduction
    /// unit): cycles between reading an element and writing it back,
    /// the SO-DIMM port held throughout.
    pub atomic_cycles: u64,
}

impl Default for DeviceTiming {
    fn default() -> Self {
        DeviceTiming {
            clock_mhz: 100.0,
            fetch_cycles: 4,
            exec_cycles: 2,
            window_bytes_per_cycle: 16,
            sodimm_latency_cycles: 8,
            sodimm_bytes_per_cycle: 16,
            nic_tx_cycles: 61,
            nic_rx_cycles: 61,
            link_bytes_per_cycle: 10,
            link_latency_cycles: 10,
            switch_latency_cycles: 20,
            wire_overhead_bytes: 26,
            mtu_bytes: 2048,
            loopback_cycles: 8,
            status_write_cycles: 2,
            reduce_bytes_per_cycle: 8,
            reduce_latency_cycles: 4,
            atomic_cycles: 2,
        }
    }
}

impl DeviceTiming {
    /// Length of one device cycle.
    pub fn cycle(&self) -> SimTime {
        SimTime::from_ns(1000.0 / self.clock_mhz)
    }

    /// `n` cycles.
    pub fn cycles(&self, n: u64) -> SimTime {
        SimTime(self.cycle().0.saturating_mul(n))
    }

    /// Cycles to move `bytes` at `per_cycle` bytes per cycle.
    pub fn xfer(&self, bytes: u64, per_cycle: u64) -> SimTime {
        self.cycles(bytes.div_ceil(per_cycle.max(1)))
    }

    /// Every field within a range where the model's arithmetic cannot
    /// overflow and the figures mean something (a `fetch_cycles` of 2^64-1
    /// or a 1e-300 MHz clock used to print 0 us and infinite bandwidth).
    fn validate(&self) -> Result<(), OutOfRange> {
        if !(self.clock_mhz.is_finite() && (1.0..=100_000.0).contains(&self.clock_mhz)) {
            return Err(OutOfRange {
                field: "device.clock_mhz".into(),
                value: self.clock_mhz,
                range: "1..=100000".into(),
            });
        }
        let ranges: [(&str, u64, u64, u64); 17] = [
            ("fetch_cycles", self.fetch_cycles, 1, MAX_CYCLES),
            ("exec_cycles", self.exec_cycles, 0, MAX_CYCLES),
            ("window_bytes_per_cycle", self.window_bytes_per_cycle, 1, MAX_BYTES_PER_CYCLE),
            ("sodimm_latency_cycles", self.sodimm_latency_cycles, 0, MAX_CYCLES),
            ("sodimm_bytes_per_cycle", self.sodimm_bytes_per_cycle, 1, MAX_BYTES_PER_CYCLE),
            ("nic_tx_cycles", self.nic_tx_cycles, 0, MAX_CYCLES),
            ("nic_rx_cycles", self.nic_rx_cycles, 0, MAX_CYCLES),
            ("link_bytes_per_cycle", self.link_bytes_per_cycle, 1, MAX_BYTES_PER_CYCLE),
            ("link_latency_cycles", self.link_latency_cycles, 0, MAX_CYCLES),
            ("switch_latency_cycles", self.switch_latency_cycles, 0, MAX_CYCLES),
            ("wire_overhead_bytes", self.wire_overhead_bytes, 0, 4096),
            ("mtu_bytes", self.mtu_bytes, 64, 1 << 20),
            ("loopback_cycles", self.loopback_cycles, 0, MAX_CYCLES),
            ("status_write_cycles", self.status_write_cycles, 0, MAX_CYCLES),
            ("reduce_bytes_per_cycle", self.reduce_bytes_per_cycle, 1, MAX_BYTES_PER_CYCLE),
            ("reduce_latency_cycles", self.reduce_latency_cycles, 0, MAX_CYCLES),
            ("atomic_cycles", self.atomic_cycles, 0, MAX_CYCLES),
        ];
        for (name, v, lo, hi) in ranges {
            if !(lo..=hi).contains(&v) {
                return Err(OutOfRange {
                    field: format!("device.{name}"),
                    value: v as f64,
                    range: format!("{lo}..={hi}"),
                });
            }
        }
        Ok(())
    }
}

/// A profile value outside the range where the model's figures mean
/// something.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{field} = {value} must be within {range}")]
pub struct OutOfRange {
    /// The field, as in the JSON (`host.uc_read_ns`, `device.mtu_bytes`).
    pub field: String,
    /// Its value.
    pub value: f64,
    /// What it may be.
    pub range: String,
}

/// Largest latency a device field may give, in cycles (10 ms at 100 MHz).
const MAX_CYCLES: u64 = 1_000_000;
/// Widest data path a device field may give.
const MAX_BYTES_PER_CYCLE: u64 = 1 << 16;

/// A complete host profile.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostProfile {
    /// Short name.
    pub name: String,
    /// What host it describes and how it was calibrated.
    #[serde(default)]
    pub description: String,
    /// Host costs.
    pub host: HostCosts,
    /// Device timing (defaults to the DIMMnet-2 FPGA prototype).
    #[serde(default)]
    pub device: DeviceTiming,
}

/// Errors loading a profile.
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    /// Neither a built-in name nor a readable file.
    #[error("no built-in profile named {0:?} and no such file (built-ins: p4-2003, p4-2003-sse2-clflush, modern)")]
    NotFound(String),
    /// The file could not be read.
    #[error("cannot read profile {path}: {source}")]
    Io {
        /// File.
        path: String,
        /// OS error.
        source: std::io::Error,
    },
    /// The JSON is malformed or has unknown/missing fields.
    #[error("profile {path} is not valid: {source}")]
    Json {
        /// File.
        path: String,
        /// Parser error.
        source: serde_json::Error,
    },
    /// A value is out of range.
    #[error("profile {path}: {problem}")]
    Invalid {
        /// File or name.
        path: String,
        /// The value out of range.
        problem: OutOfRange,
    },
}

impl HostProfile {
    /// The paper's host (seed 004 Table 1), calibrated on Table 2.
    ///
    /// Fitted: `uc_read_ns` on row 4 (VL 128 B = 0.68 us) and
    /// `nic_tx_cycles = nic_rx_cycles` on row 3 (BOTF/IVS 32 B = 2.04 us);
    /// `adi_op_ns` on row 5 (library eager 0 B = 3.87 us) and
    /// `mpi_request_ns` on row 1 (MPI eager 0 B = 5.12 us: one call, one
    /// request start and one completion on the critical path make the
    /// paper's (6) = 1.25 us, seed 004 §8.2). Every other value, including
    /// `mpi_call_ns` (50 ns), is a hardware fact or an estimate for that
    /// machine.
    pub fn p4_2003() -> HostProfile {
        HostProfile {
            name: "p4-2003".into(),
            description: "Pentium 4 2.6 GHz, VIA VT8751A, PC1600 DDR; DIMMnet-2 FPGA 100 MHz; InfiniBand 4X 2 m (seed 004 Table 1)".into(),
            host: HostCosts {
                uc_read_ns: 107.5,
                uc_write_ns: 25.0,
                wc_line_ns: 40.0,
                wc_flush_ns: 30.0,
                copy_ns_per_byte: 1.0,
                mpi_call_ns: 50.0,
                mpi_request_ns: 600.0,
                adi_op_ns: 58.0,
                request_ns: 100.0,
                match_step_ns: 10.0,
                progress_ns: 20.0,
                pw_access: PwAccess::Uncached8,
                ww_store: WwStore::Memcpy,
                pw_line_fill_ns: 0.0,
                clflush_ns: 0.0,
                wc_line_sse2_ns: 0.0,
                // An estimate, not a calibration (the papers time no
                // computation): one core of a 2003 Pentium 4 at 2.6 GHz
                // against one of a 2020s server, from SPEC CPU integer
                // results of the two generations (about 6x).
                compute_scale: 6.0,
                // Linux 2.4/2.6 on the P4: a pwrite/pread into the page
                // cache is a few microseconds of system call and VFS work,
                // and its bytes move at memory-copy speed.
                io_op_ns: 2500.0,
                io_ns_per_byte: 1.0,
            },
            device: DeviceTiming::default(),
        }
    }

    /// The paper's host with the optimizations it names as next steps
    /// (seed 004 §8.2–8.3): PW cacheable and flushed with CLFLUSH before
    /// reuse, WW written with SSE2 stores. Everything else is `p4-2003`.
    /// The paper gives no figures for these; ours are assumptions:
    ///
    /// * `pw_line_fill_ns` 40: a 64-byte line at PC1600's 1.6 GB/s peak
    ///   (64 B / 1.6 GB/s), the Pentium 4's hardware prefetcher streaming
    ///   sequential lines so that the load latency is paid once per
    ///   transfer, not per line (that once is not modelled).
    /// * `clflush_ns` 25 per line (about 65 cycles at 2.6 GHz; Intel
    ///   publishes no latency for the Pentium 4's CLFLUSH).
    /// * `wc_line_sse2_ns` 40, the same as `memcpy`: a write-combined line
    ///   leaves as one 64-byte burst either way and 40 ns is that burst on
    ///   PC1600; four 16-byte stores instead of eight 8-byte ones save CPU
    ///   cycles hidden behind it. In this model SSE2 stores alone would not
    ///   have helped this host; the cacheable PW does.
    pub fn p4_2003_sse2_clflush() -> HostProfile {
        let mut p = HostProfile::p4_2003();
        p.name = "p4-2003-sse2-clflush".into();
        p.description =
            "p4-2003 with PW cacheable + CLFLUSH and SSE2 stores into WW (seed 004 §8.3's next steps; assumed costs)"
                .into();
        p.host.pw_access = PwAccess::CachedClflush;
        p.host.pw_line_fill_ns = 40.0;
        p.host.clflush_ns = 25.0;
        p.host.ww_store = WwStore::Sse2;
        p.host.wc_line_sse2_ns = 40.0;
        p
    }

    /// A present-day host driving the same device.
    pub fn modern() -> HostProfile {
        HostProfile {
            name: "modern".into(),
            description: "present-day x86-64 host (DDR4/DDR5 memory bus) with the same DIMMnet-2 device".into(),
            host: HostCosts {
                uc_read_ns: 70.0,
                uc_write_ns: 5.0,
                wc_line_ns: 6.0,
                wc_flush_ns: 10.0,
                copy_ns_per_byte: 0.05,
                mpi_call_ns: 5.0,
                mpi_request_ns: 5.0,
                adi_op_ns: 10.0,
                request_ns: 8.0,
                match_step_ns: 1.0,
                progress_ns: 3.0,
                pw_access: PwAccess::Uncached8,
                ww_store: WwStore::Memcpy,
                pw_line_fill_ns: 0.0,
                clflush_ns: 0.0,
                wc_line_sse2_ns: 0.0,
                compute_scale: 1.0,
                io_op_ns: 1000.0,
                io_ns_per_byte: 0.1,
            },
            device: DeviceTiming::default(),
        }
    }

    /// Names of the built-in profiles.
    pub const BUILT_IN: [&'static str; 3] = ["p4-2003", "p4-2003-sse2-clflush", "modern"];

    /// A built-in profile by name.
    pub fn built_in(name: &str) -> Option<HostProfile> {
        match name {
            "p4-2003" => Some(HostProfile::p4_2003()),
            "p4-2003-sse2-clflush" => Some(HostProfile::p4_2003_sse2_clflush()),
            "modern" => Some(HostProfile::modern()),
            _ => None,
        }
    }

    /// A built-in profile, or else a JSON file.
    pub fn load(name_or_path: &str) -> Result<HostProfile, ProfileError> {
        if let Some(p) = HostProfile::built_in(name_or_path) {
            return Ok(p);
        }
        let path = std::path::Path::new(name_or_path);
        if !path.exists() {
            return Err(ProfileError::NotFound(name_or_path.into()));
        }
        let text =
            std::fs::read_to_string(path).map_err(|source| ProfileError::Io { path: name_or_path.into(), source })?;
        let p: HostProfile =
            serde_json::from_str(&text).map_err(|source| ProfileError::Json { path: name_or_path.into(), source })?;
        p.validate().map_err(|problem| ProfileError::Invalid { path: name_or_path.into(), problem })?;
        Ok(p)
    }

    /// Check every value is usable.
    pub fn validate(&self) -> Result<(), OutOfRange> {
        for &c in HostCost::ALL {
            let v = self.host.ns(c);
            if !(v.is_finite() && (0.0..1e9).contains(&v)) {
                return Err(OutOfRange { field: format!("host.{}", c.key()), value: v, range: "[0, 1e9) ns".into() });
            }
        }
        self.device.validate()
    }

    /// The cost table written into the control file (ps; copies in fs per byte).
    pub fn cost_table(&self) -> [u64; COST_SLOTS] {
        let mut t = [0u64; COST_SLOTS];
        for &c in HostCost::ALL {
            // ns -> ps, except per-byte costs: ns per byte -> fs per byte.
            let scale = if c.per_byte() { 1e6 } else { 1e3 };
            t[c as usize] = (self.host.ns(c) * scale).round() as u64;
        }
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_ins_validate_and_round_trip_through_json() {
        for name in HostProfile::BUILT_IN {
            let p = HostProfile::built_in(name).unwrap();
            p.validate().unwrap();
            let json = serde_json::to_string(&p).unwrap();
            let back: HostProfile = serde_json::from_str(&json).unwrap();
            assert_eq!(back, p);
        }
    }

    #[test]
    fn every_cost_key_names_its_json_field() {
        let p = HostProfile::p4_2003();
        let json = serde_json::to_value(&p).unwrap();
        for &c in HostCost::ALL {
            if c == HostCost::PwRead {
                continue; // derived from pw_access (below)
            }
            assert_eq!(json["host"][c.key()].as_f64(), Some(p.host.ns(c)), "{}", c.key());
        }
    }

    /// The paper's host reads PW with uncached 8-byte loads, so its PW
    /// cost is exactly `uc_read_ns` (Table 2 cannot move); the what-if
    /// variant differs only in the access modes, and a profile file from
    /// before the modes existed loads unchanged.
    #[test]
    fn pw_and_ww_access_modes_set_their_costs() {
        let p4 = HostProfile::p4_2003();
        assert_eq!(p4.host.ns(HostCost::PwRead), p4.host.uc_read_ns);
        assert_eq!(p4.host.ns(HostCost::WcLine), p4.host.wc_line_ns);
        let what_if = HostProfile::p4_2003_sse2_clflush();
        assert_eq!(what_if.host.ns(HostCost::PwRead), (40.0 + 25.0) / 8.0);
        assert_eq!(what_if.host.ns(HostCost::WcLine), 40.0);
        assert_eq!(what_if.device, p4.device);
        for &c in HostCost::ALL {
            if c != HostCost::PwRead {
                assert_eq!(what_if.host.ns(c), p4.host.ns(c), "{}", c.key());
            }
        }
        let mut sse = p4.clone();
        sse.host.pw_access = PwAccess::Uncached16;
        assert_eq!(sse.host.ns(HostCost::PwRead), p4.host.uc_read_ns / 2.0);
        let mut old = serde_json::to_value(&p4).unwrap();
        for k in ["pw_access", "ww_store", "pw_line_fill_ns", "clflush_ns", "wc_line_sse2_ns"] {
            old["host"].as_object_mut().unwrap().remove(k);
        }
        let back: HostProfile = serde_json::from_value(old).unwrap();
        assert_eq!(back.cost_table(), p4.cost_table());
        let mut bad = serde_json::to_value(&p4).unwrap();
        bad["host"]["pw_access"] = "cached".into();
        assert!(serde_json::from_value::<HostProfile>(bad).is_err(), "an unknown mode is refused");
    }

    #[test]
    fn unknown_fields_and_bad_values_are_refused() {
        let mut v = serde_json::to_value(HostProfile::modern()).unwrap();
        v["host"]["uc_raed_ns"] = 1.0.into();
        assert!(serde_json::from_value::<HostProfile>(v).is_err());
        let mut p = HostProfile::modern();
        p.host.uc_read_ns = f64::NAN;
        assert!(p.validate().is_err());
        p = HostProfile::modern();
        p.device.link_bytes_per_cycle = 0;
        assert!(p.validate().is_err());
        // Values that overflowed the model's sums or made its figures meaningless.
        for bad in [
            |d: &mut DeviceTiming| d.fetch_cycles = u64::MAX,
            |d: &mut DeviceTiming| d.fetch_cycles = 0,
            |d: &mut DeviceTiming| d.clock_mhz = 1e-300,
            |d: &mut DeviceTiming| d.wire_overhead_bytes = u64::MAX,
            |d: &mut DeviceTiming| d.nic_tx_cycles = u64::MAX,
            |d: &mut DeviceTiming| d.mtu_bytes = u64::MAX,
        ] {
            let mut p = HostProfile::p4_2003();
            bad(&mut p.device);
            let err = p.validate().expect_err("an absurd device field was accepted");
            assert!(err.field.starts_with("device."), "{err}");
        }
        assert!(matches!(HostProfile::load("no-such-profile"), Err(ProfileError::NotFound(_))));
    }

    #[test]
    fn one_cycle_is_ten_ns_at_100_mhz() {
        assert_eq!(DeviceTiming::default().cycle(), SimTime(10_000));
    }
}
