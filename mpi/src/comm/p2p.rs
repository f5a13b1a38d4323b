//! Point-to-point communication on a communicator (MPI 4.1 §3): the
//! destination and source processes, blocking, non-blocking and
//! matched-probe receives, and the messages a matched probe takes out of
//! matching.

use super::*;

/// A message a matched probe took out of matching (`MPI_Message`, MPI 4.1
/// §3.8.2): only the receive it is handed to ([`crate::staged::direct::imrecv`]) gets it.
pub struct Message {
    pub(crate) msg: adi::Matched,
    pub(crate) comm: SimpleCommunicator,
}

impl Message {
    /// The message's envelope, in its communicator's ranks.
    pub fn status(&self) -> Status {
        self.comm.status(self.msg.status())
    }
}

/// A destination or source process.
pub struct Process<'a> {
    pub(crate) comm: &'a SimpleCommunicator,
    pub(crate) rank: Rank,
}

/// Any process of a communicator (`MPI_ANY_SOURCE`).
pub struct AnyProcess<'a> {
    pub(crate) comm: &'a SimpleCommunicator,
}

/// A message's tag must be from 0 to [`crate::TAG_UB`] (§3.2.3); the
/// wildcard is a receive's `None`, not a tag (`MpiError::InvalidTag`,
/// `MPI_ERR_TAG`).
pub fn check_tag(tag: Tag) -> Result<()> {
    if !(0..=TAG_UB).contains(&tag) {
        return Err(MpiError::InvalidTag(tag));
    }
    Ok(())
}

/// Sending operations.
pub trait Destination {
    /// Rank of the destination.
    fn destination_rank(&self) -> Rank;
    #[doc(hidden)]
    fn comm(&self) -> &SimpleCommunicator;

    /// Blocking standard-mode send, tag 0 (`MPI_Send`).
    fn send<B: Buffer + ?Sized>(&self, buf: &B) -> Result<()> {
        self.send_with_tag(buf, 0)
    }

    /// Blocking standard-mode send.
    fn send_with_tag<B: Buffer + ?Sized>(&self, buf: &B, tag: Tag) -> Result<()> {
        send_impl(self.comm(), self.destination_rank(), buf.as_bytes(), tag, false)
    }

    /// Blocking send of `count` elements of a derived datatype
    /// ([`crate::datatype::View`]; MPI 4.1 §5.1): from the buffer itself
    /// when they are one block, else packed.
    fn send_view(&self, view: &crate::datatype::View<'_>, tag: Tag) -> Result<()> {
        send_impl(self.comm(), self.destination_rank(), &view.bytes()?, tag, false)
    }

    /// Blocking synchronous-mode send, tag 0 (`MPI_Ssend`): returns once the receive has matched.
    fn synchronous_send<B: Buffer + ?Sized>(&self, buf: &B) -> Result<()> {
        self.synchronous_send_with_tag(buf, 0)
    }

    /// Blocking synchronous-mode send.
    fn synchronous_send_with_tag<B: Buffer + ?Sized>(&self, buf: &B, tag: Tag) -> Result<()> {
        send_impl(self.comm(), self.destination_rank(), buf.as_bytes(), tag, true)
    }

    /// Non-blocking standard-mode send (`MPI_Isend`) straight from `buf`,
    /// which stays lent to the library until the request completes (see
    /// [`crate::request`] for `scope` and what dropping a request does).
    fn immediate_send<'a, Sc: Scope<'a>, B: Buffer + ?Sized>(&self, scope: Sc, buf: &'a B) -> Result<Request<'a>> {
        self.immediate_send_with_tag(scope, buf, 0)
    }

    /// Non-blocking standard-mode send with a tag.
    fn immediate_send_with_tag<'a, Sc: Scope<'a>, B: Buffer + ?Sized>(
        &self,
        scope: Sc,
        buf: &'a B,
        tag: Tag,
    ) -> Result<Request<'a>> {
        isend_impl(self.comm(), scope, self.destination_rank(), buf.as_bytes(), tag, false)
    }

    /// Non-blocking synchronous-mode send (`MPI_Issend`).
    fn immediate_synchronous_send<'a, Sc: Scope<'a>, B: Buffer + ?Sized>(
        &self,
        scope: Sc,
        buf: &'a B,
    ) -> Result<Request<'a>> {
        self.immediate_synchronous_send_with_tag(scope, buf, 0)
    }

    /// Non-blocking synchronous-mode send with a tag.
    fn immediate_synchronous_send_with_tag<'a, Sc: Scope<'a>, B: Buffer + ?Sized>(
        &self,
        scope: Sc,
        buf: &'a B,
        tag: Tag,
    ) -> Result<Request<'a>> {
        isend_impl(self.comm(), scope, self.destination_rank(), buf.as_bytes(), tag, true)
    }
}

/// Blocking send straight from `bytes` (no copy by the engine).
pub(crate) fn send_impl(comm: &SimpleCommunicator, to: Rank, bytes: &[u8], tag: Tag, sync: bool) -> Result<()> {
    check_tag(tag)?;
    if to == PROC_NULL {
        return Ok(());
    }
    let dest = comm.job_rank(to)?;
    let mut c = comm.shared.borrow_mut();
    let e = c.engine()?;
    charge_call(e);
    charge_request(e);
    // A rendezvous or synchronous send blocks until the receiver acts,
    // and the receiver may be waiting for this process's part of a
    // non-blocking collective: the engine's wait keeps those moving (its
    // progress hook).
    c.engine()?.send(dest, tag, comm.ctx, bytes, sync)?;
    charge_request(c.engine()?);
    Ok(())
}

pub(crate) fn isend_impl<'a, Sc: Scope<'a>>(
    comm: &SimpleCommunicator,
    scope: Sc,
    to: Rank,
    bytes: &'a [u8],
    tag: Tag,
    sync: bool,
) -> Result<Request<'a>> {
    check_tag(tag)?;
    if to == PROC_NULL {
        return Ok(Request::proc_null(comm.shared.clone(), comm.peers().clone()));
    }
    let dest = comm.job_rank(to)?;
    let id = {
        let mut c = comm.shared.borrow_mut();
        let e = c.engine()?;
        charge_call(e);
        charge_request(e);
        // SAFETY: `bytes` lives for 'a, which outlives `scope` (a LocalScope
        // is invariant in 'a and ends inside the `scope` call, before any
        // buffer it was given can be freed; a StaticScope's buffers are never
        // freed). The Request registers the id with the scope; whichever of
        // completing, dropping (waits), or the scope's end comes first
        // removes the request from the engine before the borrow ends.
        unsafe { e.isend_borrowed(dest, tag, comm.ctx, bytes, sync)? }
    };
    let target = Target::Send { dest: to, tag, bytes: bytes.len() as u64 };
    Ok(Request::new(comm.shared.clone(), id, target, comm.peers().clone(), scope.core()))
}

/// A non-blocking standard send of `bytes` with `tag` taken as given (no
/// check against the program's tag range): the layers that send on
/// channels of their own, such as partitioned communication.
pub(crate) fn isend_on<'a, Sc: Scope<'a>>(
    to: &Process<'_>,
    scope: Sc,
    bytes: &'a [u8],
    tag: Tag,
) -> Result<Request<'a>> {
    isend_impl(to.comm, scope, to.rank, bytes, tag, false)
}

/// A non-blocking receive into `bytes` with `tag` taken as given: the
/// receive half of [`isend_on`].
pub(crate) fn irecv_on<'a, Sc: Scope<'a>>(
    from: &Process<'_>,
    scope: Sc,
    bytes: &'a mut [u8],
    tag: Tag,
) -> Result<Request<'a>> {
    irecv_impl(from, scope, bytes, TagSel::Tag(tag))
}

/// Receiving operations and probes.
pub trait Source {
    #[doc(hidden)]
    fn comm(&self) -> &SimpleCommunicator;
    #[doc(hidden)]
    fn adi_source(&self) -> Result<AdiSource>;
    /// Whether this is the null process ([`crate::PROC_NULL`], MPI 4.1
    /// §3.10): a receive from it completes at once with no data and the
    /// null process's status, and a probe finds that status.
    fn is_proc_null(&self) -> bool {
        false
    }

    /// Blocking receive of one value, any tag (`MPI_Recv`).
    fn receive<T: Equivalence>(&self) -> Result<(T, Status)> {
        receive_one(self, TagSel::Any)
    }

    /// Blocking receive of one value with a tag.
    fn receive_with_tag<T: Equivalence>(&self, tag: Tag) -> Result<(T, Status)> {
        check_tag(tag)?;
        receive_one(self, TagSel::Tag(tag))
    }

    /// Blocking receive of a message of any length as a vector, any tag.
    fn receive_vec<T: Equivalence>(&self) -> Result<(Vec<T>, Status)> {
        receive_vec(self, TagSel::Any)
    }

    /// Blocking receive of a vector with a tag.
    fn receive_vec_with_tag<T: Equivalence>(&self, tag: Tag) -> Result<(Vec<T>, Status)> {
        check_tag(tag)?;
        receive_vec(self, TagSel::Tag(tag))
    }

    /// Blocking receive into a buffer, any tag. A longer message is an error (`MPI_ERR_TRUNCATE`).
    fn receive_into<B: BufferMut + ?Sized>(&self, buf: &mut B) -> Result<Status> {
        receive_into(self, buf, TagSel::Any)
    }

    /// Blocking receive into a buffer with a tag.
    fn receive_into_with_tag<B: BufferMut + ?Sized>(&self, buf: &mut B, tag: Tag) -> Result<Status> {
        check_tag(tag)?;
        receive_into(self, buf, TagSel::Tag(tag))
    }

    /// Blocking receive into `count` elements of a derived datatype
    /// ([`crate::datatype::MutView`]; MPI 4.1 §5.1), with a tag: a message
    /// of up to their packed size, unpacked into them; a shorter one fills
    /// the first elements.
    fn receive_into_view(&self, view: &mut crate::datatype::MutView<'_>, tag: Tag) -> Result<Status> {
        check_tag(tag)?;
        let mut staged = crate::datatype::zeroed_buffer(view.packed_len()?, "a staging buffer")?;
        let st = recv_into_raw(self, TagSel::Tag(tag), &mut staged)?;
        let n = usize::try_from(st.bytes()).unwrap_or(usize::MAX).min(staged.len());
        view.unpack(&staged[..n])?;
        Ok(st)
    }

    /// Non-blocking receive straight into `buf` (`MPI_Irecv`), any tag;
    /// `buf` stays lent to the library until the request completes (see
    /// [`crate::request`]). A longer message fills `buf` and completes with
    /// a truncation error; nothing is written past `buf`.
    fn immediate_receive_into<'a, Sc: Scope<'a>, B: BufferMut + ?Sized>(
        &self,
        scope: Sc,
        buf: &'a mut B,
    ) -> Result<Request<'a>> {
        irecv_impl(self, scope, buf, TagSel::Any)
    }

    /// Non-blocking receive into a buffer with a tag.
    fn immediate_receive_into_with_tag<'a, Sc: Scope<'a>, B: BufferMut + ?Sized>(
        &self,
        scope: Sc,
        buf: &'a mut B,
        tag: Tag,
    ) -> Result<Request<'a>> {
        check_tag(tag)?;
        irecv_impl(self, scope, buf, TagSel::Tag(tag))
    }

    /// Blocking probe, any tag (`MPI_Probe`).
    fn probe(&self) -> Result<Status> {
        probe_impl(self, TagSel::Any)
    }

    /// Blocking probe with a tag.
    fn probe_with_tag(&self, tag: Tag) -> Result<Status> {
        check_tag(tag)?;
        probe_impl(self, TagSel::Tag(tag))
    }

    /// Non-blocking probe, any tag (`MPI_Iprobe`).
    fn immediate_probe(&self) -> Result<Option<Status>> {
        iprobe_impl(self, TagSel::Any)
    }

    /// Non-blocking probe with a tag.
    fn immediate_probe_with_tag(&self, tag: Tag) -> Result<Option<Status>> {
        check_tag(tag)?;
        iprobe_impl(self, TagSel::Tag(tag))
    }
}

/// Blocking receive into `out`: the engine writes the message there and
/// nowhere else (no copy after it).
pub(crate) fn recv_into_raw<S: Source + ?Sized>(s: &S, tag: TagSel, out: &mut [u8]) -> Result<Status> {
    if s.is_proc_null() {
        return Ok(Status::proc_null());
    }
    let comm = s.comm();
    let src = s.adi_source()?;
    let mut c = comm.shared.borrow_mut();
    let e = c.engine()?;
    charge_call(e);
    charge_request(e);
    // Collectives in progress keep moving while this receive waits (one of
    // them may be what the sender waits for): the engine's progress hook.
    let st = c.engine()?.recv_into(src, tag, comm.ctx, out).map_err(|e| comm.peers().error(e))?;
    charge_request(c.engine()?);
    Ok(comm.status(st))
}

fn receive_one<T: Equivalence, S: Source + ?Sized>(s: &S, tag: TagSel) -> Result<(T, Status)> {
    let mut v = T::zeroed();
    if s.is_proc_null() {
        // Nothing arrives: the value stays zeroed (MPI 4.1 §3.10).
        return Ok((v, Status::proc_null()));
    }
    let st = recv_into_raw(s, tag, bytemuck::bytes_of_mut(&mut v))?;
    let want = std::mem::size_of::<T>();
    if st.bytes() != want as u64 {
        return Err(MpiError::Size { want, got: st.bytes() });
    }
    Ok((v, st))
}

/// Take the first matching message out of matching (MPI 4.1 §3.8.2):
/// waiting for one when `block`, while non-blocking collectives keep
/// moving (as probe does); `None` when not `block` and there is none.
pub(crate) fn matched_probe(
    c: &mut crate::context::Context,
    src: AdiSource,
    tag: TagSel,
    ctx: u32,
    block: bool,
) -> Result<Option<adi::Matched>> {
    if !block {
        return Ok(c.engine()?.improbe(src, tag, ctx)?);
    }
    Ok(Some(c.engine()?.mprobe(src, tag, ctx)?))
}

/// Receive a message of any length as a `Vec<T>`, allocated once at its
/// size: a matched probe (MPI 4.1 §3.8.2) sizes it, then the message is
/// received straight into it.
fn receive_vec<T: Equivalence, S: Source + ?Sized>(s: &S, tag: TagSel) -> Result<(Vec<T>, Status)> {
    if s.is_proc_null() {
        return Ok((Vec::new(), Status::proc_null()));
    }
    let comm = s.comm();
    let src = s.adi_source()?;
    let mut c = comm.shared.borrow_mut();
    charge_call(c.engine()?);
    let msg = matched_probe(&mut c, src, tag, comm.ctx, true)?
        .ok_or_else(|| MpiError::Internal { what: "probe ended without a message".into() })?;
    let st = msg.status();
    let size = std::mem::size_of::<T>();
    let e = c.engine()?;
    charge_request(e);
    if size == 0 || st.len % size as u64 != 0 {
        // Receive it anyway (a matched message must be), then report.
        let id = e.imrecv(msg, st.len)?;
        c.wait_borrowed(id)?;
        return Err(MpiError::Count { bytes: st.len, elem: size });
    }
    let n = usize::try_from(st.len / size as u64)
        .map_err(|_| MpiError::NoMemory { what: "a received message".into(), bytes: st.len })?;
    let mut v = vec![T::zeroed(); n];
    // SAFETY: the engine is the only user of `v`'s bytes until `wait_borrowed`, which completes the
    // request or abandons it before returning; `v` is not touched meanwhile and lives past it.
    let id = unsafe { e.imrecv_into(msg, bytemuck::cast_slice_mut(&mut v))? };
    c.wait_borrowed(id).map_err(|e| comm.peers().error(e))?;
    charge_request(c.engine()?);
    Ok((v, comm.status(st)))
}

fn receive_into<B: BufferMut + ?Sized, S: Source + ?Sized>(s: &S, buf: &mut B, tag: TagSel) -> Result<Status> {
    recv_into_raw(s, tag, buf.as_bytes_mut())
}

pub(crate) fn irecv_impl<'a, Sc: Scope<'a>, B: BufferMut + ?Sized, S: Source + ?Sized>(
    s: &S,
    scope: Sc,
    buf: &'a mut B,
    tag: TagSel,
) -> Result<Request<'a>> {
    let comm = s.comm();
    if s.is_proc_null() {
        return Ok(Request::proc_null(comm.shared.clone(), comm.peers().clone()));
    }
    let src = s.adi_source()?;
    let out = buf.as_bytes_mut();
    let id = {
        let mut c = comm.shared.borrow_mut();
        let e = c.engine()?;
        charge_call(e);
        charge_request(e);
        // SAFETY: as in isend_impl: `out` lives for 'a, which outlives
        // `scope`, and the request leaves the engine (completed, waited for
        // on drop, abandoned on error, or at the scope's end) before then.
        // `out` is not used again here, so the engine's pointer is the only
        // access to the buffer.
        unsafe { e.irecv_into(src, tag, comm.ctx, out)? }
    };
    Ok(Request::new(comm.shared.clone(), id, Target::Recv, comm.peers().clone(), scope.core()))
}

fn probe_impl<S: Source + ?Sized>(s: &S, tag: TagSel) -> Result<Status> {
    if s.is_proc_null() {
        return Ok(Status::proc_null());
    }
    let comm = s.comm();
    let src = s.adi_source()?;
    let mut c = comm.shared.borrow_mut();
    let e = c.engine()?;
    charge_call(e);
    Ok(comm.status(c.engine()?.probe(src, tag, comm.ctx)?))
}

fn iprobe_impl<S: Source + ?Sized>(s: &S, tag: TagSel) -> Result<Option<Status>> {
    if s.is_proc_null() {
        return Ok(Some(Status::proc_null()));
    }
    let comm = s.comm();
    let src = s.adi_source()?;
    let mut c = comm.shared.borrow_mut();
    let e = c.engine()?;
    charge_call(e);
    Ok(e.iprobe(src, tag, comm.ctx)?.map(|st| comm.status(st)))
}

impl Destination for Process<'_> {
    fn destination_rank(&self) -> Rank {
        self.rank
    }
    fn comm(&self) -> &SimpleCommunicator {
        self.comm
    }
}

impl Source for Process<'_> {
    fn comm(&self) -> &SimpleCommunicator {
        self.comm
    }
    fn adi_source(&self) -> Result<AdiSource> {
        Ok(AdiSource::Rank(self.comm.job_rank(self.rank)?))
    }
    fn is_proc_null(&self) -> bool {
        self.rank == PROC_NULL
    }
}

impl Source for AnyProcess<'_> {
    fn comm(&self) -> &SimpleCommunicator {
        self.comm
    }
    fn adi_source(&self) -> Result<AdiSource> {
        Ok(AdiSource::Any)
    }
}

impl Process<'_> {
    /// The rank of this process in its communicator.
    pub fn rank(&self) -> Rank {
        self.rank
    }
}

/// A tag to match: `None` is any tag; a negative one is refused.
pub(crate) fn tag_sel(tag: Option<Tag>) -> Result<TagSel> {
    match tag {
        None => Ok(TagSel::Any),
        Some(t) => {
            check_tag(t)?;
            Ok(TagSel::Tag(t))
        }
    }
}
