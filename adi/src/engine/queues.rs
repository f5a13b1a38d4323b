//! The request table (a slab with generations) and the posted-receive
//! queues (per communication context, in posting order; seed 004 §6.1).

use super::*;

impl Slab {
    pub(super) fn insert(&mut self, r: Req) -> Result<ReqId, AdiError> {
        let idx = match self.free.pop() {
            Some(i) => i,
            None => {
                if self.slots.len() >= (1 << 24) - 1 {
                    return Err(AdiError::TooManyRequests { most: (1 << 24) - 1 });
                }
                self.slots.push((0, None));
                (self.slots.len() - 1) as u32
            }
        };
        let slot = &mut self.slots[idx as usize];
        slot.1 = Some(r);
        Ok((idx << 8) | slot.0 as u32)
    }

    pub(super) fn get_mut(&mut self, id: ReqId) -> Option<&mut Req> {
        let (idx, gen) = ((id >> 8) as usize, (id & 0xff) as u8);
        match self.slots.get_mut(idx) {
            Some((g, Some(r))) if *g == gen => Some(r),
            _ => None,
        }
    }

    pub(super) fn get(&self, id: ReqId) -> Option<&Req> {
        let (idx, gen) = ((id >> 8) as usize, (id & 0xff) as u8);
        match self.slots.get(idx) {
            Some((g, Some(r))) if *g == gen => Some(r),
            _ => None,
        }
    }

    pub(super) fn remove(&mut self, id: ReqId) -> Option<Req> {
        let (idx, gen) = ((id >> 8) as usize, (id & 0xff) as u8);
        match self.slots.get_mut(idx) {
            Some((g, r @ Some(_))) if *g == gen => {
                *g = g.wrapping_add(1);
                self.free.push(idx as u32);
                r.take()
            }
            _ => None,
        }
    }
}

impl std::hash::Hasher for CtxHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8 | u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_u32(&mut self, n: u32) {
        self.0 = u64::from(n).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

impl PostedQueues {
    pub(super) fn push(&mut self, p: Posted) {
        if self.by_ctx.len() > self.len + KEPT_EMPTY {
            self.by_ctx.retain(|_, q| !q.is_empty());
        }
        self.by_ctx.entry(p.ctx).or_default().push_back(p);
        self.len += 1;
    }

    /// The first receive that matches `env`, taken out of its queue, and
    /// how many receives were compared.
    pub(super) fn take_match(&mut self, env: &Envelope) -> (Option<ReqId>, u64) {
        let Some(q) = self.by_ctx.get_mut(&env.ctx) else { return (None, 0) };
        let mut steps = 0u64;
        let found = q.iter().position(|p| {
            steps += 1;
            matches(p.src, p.tag, p.ctx, env)
        });
        let id = found.and_then(|i| q.remove(i)).map(|p| p.id);
        if id.is_some() {
            self.len -= 1;
            if !self.watched.is_empty() && self.watched.contains(&env.ctx) {
                self.hits.push(env.ctx);
            }
        }
        (id, steps)
    }

    /// Withdraw receive `id` of context `ctx`, if it is posted.
    pub(super) fn remove(&mut self, ctx: u32, id: ReqId) {
        if let Some(q) = self.by_ctx.get_mut(&ctx) {
            let before = q.len();
            q.retain(|p| p.id != id);
            self.len -= before - q.len();
        }
    }

    pub(super) fn len(&self) -> usize {
        self.len
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Matching stays within a context and in posting order, and queues
    /// emptied by a stream of short-lived contexts do not pile up.
    #[test]
    fn posted_queues_match_per_context_and_stay_bounded() {
        let mut q = PostedQueues::default();
        let env = |ctx, tag| Envelope { ctx, tag, src: 1, len: 0 };
        q.push(Posted { id: 1, src: Source::Any, tag: TagSel::Any, ctx: 7 });
        q.push(Posted { id: 2, src: Source::Any, tag: TagSel::Tag(5), ctx: 8 });
        q.push(Posted { id: 3, src: Source::Any, tag: TagSel::Tag(5), ctx: 8 });
        assert_eq!(q.take_match(&env(9, 5)), (None, 0), "no queue for context 9");
        assert_eq!(q.take_match(&env(8, 5)), (Some(2), 1), "context 7's receive is not searched");
        assert_eq!(q.take_match(&env(8, 5)), (Some(3), 1));
        assert_eq!(q.len(), 1);
        for ctx in 1000..11_000 {
            q.push(Posted { id: ctx, src: Source::Any, tag: TagSel::Any, ctx });
            assert_eq!(q.take_match(&env(ctx, 0)).0, Some(ctx));
        }
        assert!(q.by_ctx.len() <= KEPT_EMPTY + 2, "{} queues kept", q.by_ctx.len());
        q.remove(7, 1);
        assert_eq!(q.len(), 0);
    }
}
