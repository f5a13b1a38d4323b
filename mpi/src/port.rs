//! Client/server connections between groups of a job (MPI 4.1 §11.10):
//! ports, `MPI_Comm_accept`/`MPI_Comm_connect`, `MPI_Comm_join`, and the
//! name service (`MPI_Publish_name`, `MPI_Lookup_name`,
//! `MPI_Unpublish_name`).
//!
//! A port names the process that opened it and a number among its ports:
//! `dnmpi-port:JOB:RANK:N`, where `JOB` is the job's number (`DN_JOB_ID`)
//! and `RANK` the opener's rank in the job. A connect's leader sends its
//! group (and the next context id free at every member) to the opener,
//! on `MPI_COMM_WORLD`'s collective context with a tag made from `N`;
//! the accepting leader, which must be the opener, takes connects in the
//! order they come, answers with its group and the context id both sides
//! then use (the larger of the two), and each leader tells its members,
//! as `MPI_Intercomm_create` does. The groups must be disjoint: this
//! library connects groups of one job, whose processes `dnrun` started
//! together (process creation, §11.8, is not there yet, and two jobs
//! started apart have no path between them).
//!
//! Names are published as files in the job's directory, one per service,
//! holding the port's name: every process of the job sees them, on every
//! backend, and they go with the job.

use std::path::PathBuf;

use adi::{Source as AdiSource, TagSel};

use crate::comm::SimpleCommunicator;
use crate::error::{JoinError, PortError};
use crate::{MpiError, Rank, Result, ServiceError};

/// The prefix of this library's port names.
const PREFIX: &str = "dnmpi-port";

/// `MPI_COMM_WORLD`'s collective context, where leaders meet.
const WORLD_COLL_CTX: u32 = 1;

/// The tags of a port's messages on `MPI_COMM_WORLD`'s collective
/// context, `PORT_TAG | n`: above `MPI_Intercomm_create`'s (`1 << 28` and
/// the user's 28 bits) and `MPI_Comm_create_group`'s (`1 << 29` and the
/// user's 28 bits), below the schedules' (`1 << 30`).
const PORT_TAG: i32 = 0x3000_0000;
/// The most ports a process opens.
const MAX_PORTS: u32 = 0x07FF_FFFF;
/// The tag of the messages between a group's members and its root in an
/// accept, a connect or a spawn (`intercomm_with`): apart from every
/// port's, since the group may be `MPI_COMM_WORLD` and its messages then
/// share the ports' context.
pub(crate) const MEMBERS_TAG: i32 = 0x3800_0000;
const _: () =
    assert!(PORT_TAG > (1 << 29) + 0x0FFF_FFFF && PORT_TAG + (MAX_PORTS as i32) < MEMBERS_TAG && MEMBERS_TAG < 1 << 30);

/// A port's parts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Port {
    job: u32,
    owner: u32,
    n: u32,
}

impl Port {
    fn name(self) -> String {
        format!("{PREFIX}:{}:{}:{}", self.job, self.owner, self.n)
    }

    fn parse(name: &str) -> Result<Port> {
        let bad = || MpiError::Port(PortError::NotAName { name: name.into(), prefix: PREFIX });
        let mut parts = name.trim_end_matches('\0').split(':');
        if parts.next() != Some(PREFIX) {
            return Err(bad());
        }
        let mut num = || parts.next().and_then(|p| p.parse::<u32>().ok()).ok_or_else(bad);
        let (job, owner, n) = (num()?, num()?, num()?);
        if parts.next().is_some() || n > MAX_PORTS {
            return Err(bad());
        }
        Ok(Port { job, owner, n })
    }

    fn tag(self) -> i32 {
        PORT_TAG | self.n as i32
    }
}

/// This job's number and directory, as the launcher gave them.
fn job() -> (u32, Option<PathBuf>) {
    match adi::JobEnv::from_env() {
        Ok(Some(j)) => (j.job_id, j.dir),
        _ => (0, None),
    }
}

fn words(v: &[u32]) -> Vec<u8> {
    v.iter().flat_map(|w| w.to_le_bytes()).collect()
}

fn unwords(b: &[u8]) -> Result<Vec<u32>> {
    if b.len() % 4 != 0 || b.len() < 8 {
        return Err(MpiError::Port(PortError::Corrupt));
    }
    Ok(b.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect())
}

impl SimpleCommunicator {
    /// This process's rank in the job.
    fn job_me(&self) -> u32 {
        self.group.members[self.rank as usize]
    }

    /// `MPI_Open_port` (§11.10.2): a new port of this process, by name.
    pub fn open_port(&self) -> Result<String> {
        let mut sh = self.shared.borrow_mut();
        let Some(n) = sh.ports.open(MAX_PORTS) else {
            return Err(PortError::TooMany { max: u64::from(MAX_PORTS) + 1 }.into());
        };
        Ok(Port { job: job().0, owner: self.job_me(), n }.name())
    }

    /// `MPI_Close_port`: the port, opened by this process, is no longer
    /// one.
    pub fn close_port(&self, name: &str) -> Result<()> {
        let p = self.own_port(name, "MPI_Close_port")?;
        self.shared.borrow_mut().ports.close(p.n);
        Ok(())
    }

    /// Port `name`, which this process opened and has not closed.
    fn own_port(&self, name: &str, call: &'static str) -> Result<Port> {
        let p = Port::parse(name)?;
        let me = self.job_me();
        if p.job != job().0 || p.owner != me || !self.shared.borrow().ports.is_open(p.n) {
            return Err(PortError::NotOpenHere { call, name: name.into(), rank: me }.into());
        }
        Ok(p)
    }

    /// `MPI_Comm_accept` (§11.10.2): an intercommunicator with the group
    /// that connects to `port`, collective over this communicator;
    /// `port` matters at `root`, which must have opened it.
    pub fn accept(&self, port: &str, root: Rank) -> Result<SimpleCommunicator> {
        self.intra_only("MPI_Comm_accept")?;
        let call = "MPI_Comm_accept";
        self.intercomm_with(root, MEMBERS_TAG, call, |ctx| self.accept_on(port, ctx, call))
    }

    /// The root's part of an accept on `port`, which it opened: take the
    /// next connect, answer with this group and the larger of the two
    /// free context ids (`ctx` is this group's).
    pub(crate) fn accept_on(&self, port: &str, ctx: u32, call: &'static str) -> Result<(u32, bool, Vec<u32>)> {
        let p = self.own_port(port, call)?;
        let mut sh = self.shared.borrow_mut();
        let e = sh.engine()?;
        let (st, got) = e.recv(AdiSource::Any, TagSel::Tag(p.tag()), WORLD_COLL_CTX, u64::MAX)?;
        let got = unwords(&got)?;
        let (&rctx, remote) = got.split_first().ok_or(MpiError::Port(PortError::Corrupt))?;
        let ctx = ctx.max(rctx);
        let mine: Vec<u32> = [ctx].into_iter().chain(self.group.members.iter().copied()).collect();
        e.send(st.source, p.tag(), WORLD_COLL_CTX, &words(&mine), false)?;
        Ok((ctx, true, remote.to_vec()))
    }

    /// The part of `MPI_Comm_accept` or `MPI_Comm_connect` a `root` takes
    /// when its own arguments were refused before the call could start:
    /// its group hears that the call failed there (a port's failure as
    /// `MPI_ERR_PORT`), instead of waiting for it. Collective as the call.
    pub fn meet_refused(&self, root: Rank, port_error: bool) -> Result<()> {
        let refused = |call: &str| -> MpiError {
            if port_error {
                MpiError::Port(PortError::RootRefused)
            } else {
                MpiError::Inter(crate::error::InterError::RootRefused { call: call.to_string() })
            }
        };
        match self.intercomm_with(root, MEMBERS_TAG, "MPI_Comm_accept/connect", |_| Err(refused("the call"))) {
            Ok(_) => Ok(()),
            Err(_) if self.rank == root => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// `MPI_Comm_connect`: an intercommunicator with the group that
    /// accepts on `port`, collective over this communicator; `port`
    /// matters at `root`.
    pub fn connect(&self, port: &str, root: Rank) -> Result<SimpleCommunicator> {
        self.intra_only("MPI_Comm_connect")?;
        self.intercomm_with(root, MEMBERS_TAG, "MPI_Comm_connect", |ctx| {
            let p = Port::parse(port)?;
            let n = self.shared.borrow_mut().engine()?.size();
            if p.job != job().0 || p.owner >= n {
                return Err(PortError::OtherJob { name: port.into(), job: job().0, size: n }.into());
            }
            if self.group.members.contains(&p.owner) {
                return Err(PortError::SameGroup { name: port.into() }.into());
            }
            let mine: Vec<u32> = [ctx].into_iter().chain(self.group.members.iter().copied()).collect();
            let mut sh = self.shared.borrow_mut();
            let e = sh.engine()?;
            e.send(p.owner, p.tag(), WORLD_COLL_CTX, &words(&mine), false)?;
            let (_, got) = e.recv(AdiSource::Rank(p.owner), TagSel::Tag(p.tag()), WORLD_COLL_CTX, u64::MAX)?;
            let got = unwords(&got)?;
            let (&ctx, remote) = got.split_first().ok_or(MpiError::Port(PortError::Corrupt))?;
            Ok((ctx, false, remote.to_vec()))
        })
    }

    /// `MPI_Comm_join` (§11.10.4): an intercommunicator of this process
    /// and the one at the other end of the connected socket `fd`, made
    /// by exchanging job ranks and free context ids over the socket.
    /// This communicator is `MPI_COMM_WORLD`.
    pub fn join(&self, fd: i32) -> Result<SimpleCommunicator> {
        let me = self.job_me();
        let next = self.shared.borrow().next_ctx;
        let (job, _) = job();
        // The peer's words are awaited without blocking in the socket: on
        // the simulator, a rank blocked outside MPI would keep the others
        // (and the peer) from running, so the wait is a microsecond of
        // simulated time at a time, each handing the token over (the peer
        // may be waiting for a poke); elsewhere a poll.
        let simulated = self.shared.borrow_mut().engine()?.now_ps().is_some();
        let theirs = exchange_over(fd, &[job, me, next], simulated, &mut || {
            Ok(self.shared.borrow_mut().engine()?.pause(1000.0)?)
        })?;
        let [their_job, them, their_next] = theirs;
        if their_job != job || them == me || them >= self.shared.borrow_mut().engine()?.size() {
            return Err(JoinError::NotThisJob { their_job, them, job, me }.into());
        }
        let ctx = next.max(their_next);
        crate::context::check_agreed(ctx, 4)?;
        Ok(self.inter_from(ctx, vec![me], vec![them], me < them))
    }
}

/// Send `mine` over socket `fd` and read the peer's three words, calling
/// `pass` (simulated: 0-timeout polls) while none has come.
fn exchange_over(fd: i32, mine: &[u32; 3], simulated: bool, pass: &mut dyn FnMut() -> Result<()>) -> Result<[u32; 3]> {
    let os = |what: &'static str| -> MpiError {
        JoinError::Socket { what, fd, os: std::io::Error::last_os_error().to_string() }.into()
    };
    let out = words(mine);
    let mut at = 0;
    while at < out.len() {
        // SAFETY: `out[at..]` is valid for reads of its length; `write`
        // on a descriptor that is not open fails with EBADF, nothing more.
        let n = unsafe { libc::write(fd, out[at..].as_ptr().cast(), out.len() - at) };
        match n {
            n if n > 0 => at += n as usize,
            _ if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted => {}
            _ => return Err(os("writing to")),
        }
    }
    let mut got = [0u8; 12];
    let mut at = 0;
    while at < got.len() {
        let mut p = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
        // SAFETY: `p` is one valid pollfd.
        let ready = unsafe { libc::poll(&mut p, 1, if simulated { 0 } else { 100 }) };
        if ready == 0 {
            if simulated {
                pass()?;
            }
            continue;
        }
        if ready < 0 {
            if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(os("waiting on"));
        }
        // SAFETY: `got[at..]` is valid for writes of its length.
        let n = unsafe { libc::read(fd, got[at..].as_mut_ptr().cast(), got.len() - at) };
        match n {
            n if n > 0 => at += n as usize,
            0 => return Err(JoinError::Closed { fd }.into()),
            _ if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted => {}
            _ => return Err(os("reading from")),
        }
    }
    let w = |i: usize| u32::from_le_bytes([got[4 * i], got[4 * i + 1], got[4 * i + 2], got[4 * i + 3]]);
    Ok([w(0), w(1), w(2)])
}

/// The directory the job's published names are in.
fn names_dir() -> PathBuf {
    match job() {
        (_, Some(dir)) => dir.join("names"),
        // No job directory (a launcher other than dnrun): one per user
        // and job number, so that other users' names are not ours.
        // SAFETY: getuid has no preconditions and cannot fail.
        (id, None) => std::env::temp_dir().join(format!("dnmpi-names-{}-{id}", unsafe { libc::getuid() })),
    }
}

/// The file of `service`: its name's bytes in hexadecimal, so that any
/// name is a file name.
fn service_file(service: &str) -> Result<PathBuf> {
    if service.is_empty() {
        return Err(MpiError::Service(ServiceError::Empty));
    }
    Ok(names_dir().join(service.bytes().map(|b| format!("{b:02x}")).collect::<String>()))
}

/// `MPI_Publish_name` (§11.10.5): `service` names `port` (any string:
/// the name service does not look inside) for every process of the job
/// until it is unpublished. A service published
/// already is refused (`MPI_ERR_SERVICE`).
pub fn publish_name(service: &str, port: &str) -> Result<()> {
    let f = service_file(service)?;
    let fail = |e: std::io::Error| {
        MpiError::Service(ServiceError::Io {
            call: "MPI_Publish_name",
            service: service.into(),
            why: format!("could not publish it: {e}"),
        })
    };
    std::fs::create_dir_all(names_dir()).map_err(fail)?;
    let mut tmp = f.clone().into_os_string();
    tmp.push(format!(".{}.tmp", std::process::id()));
    std::fs::write(&tmp, port).map_err(fail)?;
    // A hard link is created only if the name is free: two processes
    // publishing one service at once cannot both succeed.
    let linked = std::fs::hard_link(&tmp, &f);
    let _ = std::fs::remove_file(&tmp);
    match linked {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            Err(MpiError::Service(ServiceError::Published { service: service.into() }))
        }
        Err(e) => Err(fail(e)),
    }
}

/// `MPI_Lookup_name`: the port `service` names (`MPI_ERR_NAME` if none).
pub fn lookup_name(service: &str) -> Result<String> {
    let f = service_file(service)?;
    std::fs::read_to_string(f).map_err(|_| MpiError::Name { service: service.to_string() })
}

/// `MPI_Unpublish_name`: `service` no longer names `port`
/// (`MPI_ERR_SERVICE` if it does not now).
pub fn unpublish_name(service: &str, port: &str) -> Result<()> {
    let f = service_file(service)?;
    match std::fs::read_to_string(&f) {
        Ok(p) if p == port.trim_end_matches('\0') => std::fs::remove_file(&f).map_err(|e| {
            MpiError::Service(ServiceError::Io {
                call: "MPI_Unpublish_name",
                service: service.into(),
                why: e.to_string(),
            })
        }),
        Ok(names) => {
            Err(MpiError::Service(ServiceError::OtherPort { service: service.into(), names, port: port.into() }))
        }
        Err(_) => Err(MpiError::Service(ServiceError::NotPublished { service: service.into() })),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn port_names_round_trip_and_foreign_names_are_refused() {
        let p = Port { job: 7, owner: 3, n: 12 };
        assert_eq!(Port::parse(&p.name()).ok(), Some(p));
        for bad in [
            "",
            "dnmpi-port:1:2",
            "dnmpi-port:1:2:3:4",
            "tcp://host:1234",
            "dnmpi-port:a:2:3",
            "dnmpi-port:1:2:268435456",
        ] {
            assert!(matches!(Port::parse(bad), Err(MpiError::Port(PortError::NotAName { .. }))), "{bad:?}");
        }
    }

    #[test]
    fn service_files_take_any_name() {
        let f = service_file("a/b c").unwrap_or_default();
        assert_eq!(f.file_name().and_then(|n| n.to_str()), Some("612f622063"));
        assert_eq!(service_file(""), Err(MpiError::Service(ServiceError::Empty)));
    }
}
