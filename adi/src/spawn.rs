//! Spawn requests: how a rank asks its launcher for new processes
//! (MPI 4.1 §11.8), the second half of the contract between `dnrun` and a
//! rank ([`crate::job`] is the first).
//!
//! A launcher that can add processes to a running job (`dnrun
//! --universe-size N` with room left) makes the directory [`DIR`] in the
//! job directory. A spawning root writes its request there as
//! `RANK.SEQ.req` (written under another name and renamed, so the launcher
//! never reads half of one) and waits for `RANK.SEQ.rep`. The launcher
//! starts every process of the request or none: the reply gives the first
//! job rank of the new processes, which are numbered consecutively, one
//! command after the other, or says why nothing was started.
//!
//! Both files are NUL-separated fields (no C string holds a NUL), led by
//! a word naming the format, so that a mismatched launcher and library
//! refuse each other by name.

use std::path::{Path, PathBuf};

/// The folder of the job directory where requests and replies go.
pub const DIR: &str = "spawn";
/// The first field of a request.
const REQUEST_MAGIC: &str = "dnspawn-req-1";
/// The first field of a reply.
const REPLY_MAGIC: &str = "dnspawn-rep-1";

/// One command of a spawn (one element of `MPI_Comm_spawn_multiple`'s arrays).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpawnCommand {
    /// The program: a path, or a name looked up in `path` and then `PATH`.
    pub program: String,
    /// Its arguments, after the program name.
    pub args: Vec<String>,
    /// How many processes run it (at least 1).
    pub maxprocs: u32,
    /// The reserved info key `wdir` (§11.8.4): the processes' working
    /// directory, and where a relative program is found.
    pub wdir: Option<String>,
    /// The reserved info key `path`: directories (`:`-separated) to look
    /// for the program in, before `PATH`.
    pub path: Option<String>,
}

/// A request: the parents' port (the new processes connect to it from
/// `MPI_Init`) and the commands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpawnRequest {
    /// The port the spawning root accepts on.
    pub port: String,
    /// The commands, in order (`MPI_APPNUM` is the index).
    pub commands: Vec<SpawnCommand>,
}

/// The launcher's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SpawnReply {
    /// Every process was started: they are job ranks `first..first + count`.
    Started {
        /// The first new job rank.
        first: u32,
        /// How many.
        count: u32,
    },
    /// Nothing was started, for this reason (meant for the user).
    Refused(String),
}

/// A spawn request or reply that cannot be written or read: the launcher
/// and the library disagree on the format, or a file was cut short.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SpawnCodecError {
    /// A field (a program name, an argument) holds a NUL byte.
    #[error("{field:?} holds a NUL byte, which a spawn request cannot carry")]
    Nul {
        /// The field.
        field: String,
    },
    /// The bytes are not UTF-8.
    #[error("a spawn message that is not UTF-8")]
    NotUtf8,
    /// The last field does not end.
    #[error("a truncated spawn message")]
    Truncated,
    /// A field that should be there is not.
    #[error("a spawn request without its {what}")]
    Missing {
        /// Which field.
        what: &'static str,
    },
    /// Another format, or another version of it.
    #[error("not a spawn {kind} of this library's format ({magic}); use dnrun and libmpi_abi of one install")]
    Format {
        /// `"request"` or `"reply"`.
        kind: &'static str,
        /// The format this library reads.
        magic: &'static str,
    },
    /// A count or rank that is not a number.
    #[error("a spawn message whose {what} {value:?} is not a number")]
    NotANumber {
        /// Which field.
        what: &'static str,
        /// Its text.
        value: String,
    },
    /// Fields after the last command.
    #[error("a spawn request with fields after its last command")]
    Trailing,
}

fn fields(bytes: &[u8]) -> Result<Vec<String>, SpawnCodecError> {
    let text = std::str::from_utf8(bytes).map_err(|_| SpawnCodecError::NotUtf8)?;
    let mut v: Vec<String> = text.split('\0').map(str::to_string).collect();
    // Every field ends with a NUL, so the last piece is empty.
    if v.pop().as_deref() != Some("") {
        return Err(SpawnCodecError::Truncated);
    }
    Ok(v)
}

fn join(fields: &[&str]) -> Result<Vec<u8>, SpawnCodecError> {
    let mut out = Vec::new();
    for f in fields {
        if f.contains('\0') {
            return Err(SpawnCodecError::Nul { field: f.to_string() });
        }
        out.extend_from_slice(f.as_bytes());
        out.push(0);
    }
    Ok(out)
}

impl SpawnRequest {
    /// The request's bytes.
    pub fn encode(&self) -> Result<Vec<u8>, SpawnCodecError> {
        let mut f: Vec<String> = vec![REQUEST_MAGIC.into(), self.port.clone(), self.commands.len().to_string()];
        for c in &self.commands {
            f.push(c.program.clone());
            f.push(c.maxprocs.to_string());
            f.push(c.wdir.clone().map_or_else(String::new, |w| format!("={w}")));
            f.push(c.path.clone().map_or_else(String::new, |p| format!("={p}")));
            f.push(c.args.len().to_string());
            f.extend(c.args.iter().cloned());
        }
        join(&f.iter().map(String::as_str).collect::<Vec<_>>())
    }

    /// A request from its bytes; a malformed one is refused, saying how.
    pub fn decode(bytes: &[u8]) -> Result<SpawnRequest, SpawnCodecError> {
        let f = fields(bytes)?;
        let mut it = f.into_iter();
        let mut next = |what: &'static str| it.next().ok_or(SpawnCodecError::Missing { what });
        if next("format")? != REQUEST_MAGIC {
            return Err(SpawnCodecError::Format { kind: "request", magic: REQUEST_MAGIC });
        }
        let port = next("port")?;
        let num = |value: String, what: &'static str| {
            value.parse::<u32>().map_err(|_| SpawnCodecError::NotANumber { what, value })
        };
        let n = num(next("command count")?, "command count")?;
        let opt = |v: String| v.strip_prefix('=').map(str::to_string);
        let mut commands = Vec::new();
        for _ in 0..n {
            let program = next("program")?;
            let maxprocs = num(next("maxprocs")?, "maxprocs")?;
            let wdir = opt(next("wdir")?);
            let path = opt(next("path")?);
            let nargs = num(next("argument count")?, "argument count")?;
            let args = (0..nargs).map(|_| next("argument")).collect::<Result<Vec<_>, _>>()?;
            commands.push(SpawnCommand { program, args, maxprocs, wdir, path });
        }
        if it.next().is_some() {
            return Err(SpawnCodecError::Trailing);
        }
        Ok(SpawnRequest { port, commands })
    }

    /// How many processes the request asks for (`None`: more than a `u32`).
    pub fn total(&self) -> Option<u32> {
        self.commands.iter().try_fold(0u32, |t, c| t.checked_add(c.maxprocs))
    }
}

impl SpawnReply {
    /// The reply's bytes.
    pub fn encode(&self) -> Vec<u8> {
        let f: Vec<String> = match self {
            SpawnReply::Started { first, count } => {
                vec![REPLY_MAGIC.into(), "started".into(), first.to_string(), count.to_string()]
            }
            // A NUL in a reason would cut it: none comes from the launcher's
            // own messages, but a program name could hold one.
            SpawnReply::Refused(why) => vec![REPLY_MAGIC.into(), "refused".into(), why.replace('\0', "\\0")],
        };
        let mut out = Vec::new();
        for s in f {
            out.extend_from_slice(s.as_bytes());
            out.push(0);
        }
        out
    }

    /// A reply from its bytes.
    pub fn decode(bytes: &[u8]) -> Result<SpawnReply, SpawnCodecError> {
        let f = fields(bytes)?;
        let num = |what: &'static str, v: &str| {
            v.parse::<u32>().map_err(|_| SpawnCodecError::NotANumber { what, value: v.to_string() })
        };
        match f.iter().map(String::as_str).collect::<Vec<_>>()[..] {
            [REPLY_MAGIC, "started", first, count] => {
                Ok(SpawnReply::Started { first: num("first rank", first)?, count: num("process count", count)? })
            }
            [REPLY_MAGIC, "refused", why] => Ok(SpawnReply::Refused(why.to_string())),
            _ => Err(SpawnCodecError::Format { kind: "reply", magic: REPLY_MAGIC }),
        }
    }
}

/// Where rank `rank`'s request number `seq` goes in `job_dir`, and its reply.
pub fn request_paths(job_dir: &Path, rank: u32, seq: u64) -> (PathBuf, PathBuf) {
    let d = job_dir.join(DIR);
    (d.join(format!("{rank}.{seq}.req")), d.join(format!("{rank}.{seq}.rep")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_and_replies_round_trip() {
        let r = SpawnRequest {
            port: "dnmpi-port:1:0:3".into(),
            commands: vec![
                SpawnCommand {
                    program: "./a b".into(),
                    args: vec!["".into(), "x y".into()],
                    maxprocs: 2,
                    wdir: Some("".into()),
                    path: None,
                },
                SpawnCommand { program: "c".into(), args: vec![], maxprocs: 1, wdir: None, path: Some("/bin".into()) },
            ],
        };
        assert_eq!(SpawnRequest::decode(&r.encode().unwrap()).unwrap(), r);
        assert_eq!(r.total(), Some(3));
        for rep in [SpawnReply::Started { first: 4, count: 3 }, SpawnReply::Refused("no room".into())] {
            assert_eq!(SpawnReply::decode(&rep.encode()).unwrap(), rep);
        }
    }

    #[test]
    fn malformed_messages_are_refused_not_misread() {
        let ok = SpawnRequest {
            port: "p".into(),
            commands: vec![SpawnCommand { program: "a".into(), args: vec![], maxprocs: 1, wdir: None, path: None }],
        }
        .encode()
        .unwrap();
        for cut in 0..ok.len() {
            assert!(SpawnRequest::decode(&ok[..cut]).is_err(), "cut at {cut}");
        }
        let mut extra = ok.clone();
        extra.extend_from_slice(b"x\0");
        assert_eq!(SpawnRequest::decode(&extra).unwrap_err(), SpawnCodecError::Trailing);
        assert_eq!(
            SpawnReply::decode(b"dnspawn-rep-1\0started\0x\0\x31\0").unwrap_err(),
            SpawnCodecError::NotANumber { what: "first rank", value: "x".into() }
        );
        let nul = SpawnCommand { program: "a\0b".into(), args: vec![], maxprocs: 1, wdir: None, path: None };
        assert!(SpawnRequest { port: "p".into(), commands: vec![nul] }
            .encode()
            .unwrap_err()
            .to_string()
            .contains("NUL"));
    }
}
