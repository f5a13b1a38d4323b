//! Client/server connections through the Rust API (`mpi::port`, MPI 4.1
//! §11.10): the last rank opens a port and publishes it, the others look
//! it up and connect as one group (their root: their last rank), a
//! message goes each way across the intercommunicator, and the name
//! service and a bad port answer with their own errors.

use mpi::traits::*;
use mpi::{Color, MpiError, SimpleCommunicator};

use crate::{e, R};

/// `mpi-suite ports`.
pub(crate) fn ports(w: &SimpleCommunicator) -> R {
    let (me, n) = (w.rank(), w.size());
    // The root finds the name is no port; the others hear that the call
    // failed at their leader, a port's failure all the same.
    let got = w.connect("not a port", 0);
    let expected = match (me, &got) {
        (0, Err(MpiError::Port(mpi::PortError::NotAName { .. }))) => true,
        (_, Err(MpiError::Port(mpi::PortError::AtLeader { .. }))) => me != 0,
        _ => false,
    };
    if !expected {
        let got = got.err().map_or("success".to_string(), |e| format!("{e:?}"));
        return Err(format!("rank {me}: a connect to a name that is not a port was not MPI_ERR_PORT: {got}"));
    }
    if n < 2 {
        println!("OK ports");
        return Ok(());
    }
    let server = n - 1;
    let service = "mpi-suite ports";
    let port = if me == server {
        let p = w.open_port().map_err(e)?;
        mpi::port::publish_name(service, &p).map_err(e)?;
        Some(p)
    } else {
        None
    };
    w.barrier().map_err(e)?;
    let side = w.split_by_color(Color::With(i32::from(me == server))).map_err(e)?.ok_or("no side")?;
    let inter = match &port {
        Some(p) => side.accept(p, 0).map_err(e)?,
        None => {
            let root = side.size() - 1;
            let name = if side.rank() == root { mpi::port::lookup_name(service).map_err(e)? } else { String::new() };
            side.connect(&name, root).map_err(e)?
        }
    };
    let remote = inter.remote_members().map_or(0, <[u32]>::len) as i32;
    let want = if me == server { n - 1 } else { 1 };
    if remote != want {
        return Err(format!("rank {me}: the intercommunicator's remote group has {remote} processes, not {want}"));
    }
    // The server sends each client its rank; each client answers with it + 1000.
    if me == server {
        for r in 0..remote {
            inter.process_at_rank(r).send(&r).map_err(e)?;
            let (back, _) = inter.process_at_rank(r).receive::<i32>().map_err(e)?;
            if back != r + 1000 {
                return Err(format!("server: client {r} answered {back}"));
            }
        }
    } else {
        let (got, _) = inter.process_at_rank(0).receive::<i32>().map_err(e)?;
        if got != side.rank() {
            return Err(format!("rank {me}: got {got}, not my client rank {}", side.rank()));
        }
        inter.process_at_rank(0).send(&(got + 1000)).map_err(e)?;
    }
    w.barrier().map_err(e)?;
    if let Some(p) = &port {
        if !matches!(mpi::port::publish_name(service, p), Err(MpiError::Service(_))) {
            return Err("a second publish was not MPI_ERR_SERVICE".into());
        }
        mpi::port::unpublish_name(service, p).map_err(e)?;
        if !matches!(mpi::port::lookup_name(service), Err(MpiError::Name { .. })) {
            return Err("a lookup after the unpublish was not MPI_ERR_NAME".into());
        }
        w.close_port(p).map_err(e)?;
        if !matches!(w.close_port(p), Err(MpiError::Port(_))) {
            return Err("a second close was not MPI_ERR_PORT".into());
        }
    }
    if me == 0 {
        println!("OK ports");
    }
    Ok(())
}
