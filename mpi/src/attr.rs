//! Attribute caching (MPI 4.1 §7.7): keyvals, and the values a program
//! caches on communicators, windows and datatypes under them.
//!
//! - **The rules, for any kind of value** ([`Keyvals`], [`Attrs`]): a
//!   keyval is made with its callbacks and handed out once; a freed keyval
//!   takes no new attribute but lives on while values set under it remain,
//!   and is forgotten after the last goes (§7.7.2); setting a value over
//!   another deletes the old one first; an object's values are deleted last
//!   set first when it is freed. The C library keeps its raw values and C
//!   callbacks in these.
//! - **The Rust API** ([`Keyval`], and `attr`, `set_attr`, `delete_attr`
//!   on a communicator): a value of any `Clone` type; its copy callback is
//!   its `clone` (or none, [`OnDuplicate`]), its delete callback its `drop`.
//!   A communicator's duplicate gets the copies (§7.4.2); the values go when
//!   the communicator does.
//!
//! In the core: it names nothing above.

use std::any::Any;
use std::collections::BTreeMap;
use std::marker::PhantomData;
use std::rc::Rc;

use crate::error::KeyvalError;

/// A keyval's number, as the C interface hands it out.
pub type KeyvalId = i32;

/// The keyvals of a process and their callbacks `K` (§7.7.2).
#[derive(Debug)]
pub struct Keyvals<K> {
    entries: BTreeMap<KeyvalId, (K, bool)>,
    first: KeyvalId,
    next: KeyvalId,
}

impl<K> Keyvals<K> {
    /// No keyvals; the first made is `first` (those below are predefined).
    pub fn new(first: KeyvalId) -> Keyvals<K> {
        Keyvals { entries: BTreeMap::new(), first, next: first }
    }

    /// Make a keyval with `callbacks`.
    pub fn create(&mut self, callbacks: K) -> Result<KeyvalId, KeyvalError> {
        let k = self.next;
        self.next = k.checked_add(1).ok_or(KeyvalError::Exhausted)?;
        self.entries.insert(k, (callbacks, false));
        Ok(k)
    }

    /// `k`'s callbacks, while it exists (made, and not freed with no value
    /// left under it).
    pub fn get(&self, k: KeyvalId) -> Result<&K, KeyvalError> {
        self.entries.get(&k).map(|(c, _)| c).ok_or(KeyvalError::Unknown { keyval: k })
    }

    /// `k`'s callbacks for setting a value: refused once `k` is freed.
    pub fn settable(&self, k: KeyvalId) -> Result<&K, KeyvalError> {
        match self.entries.get(&k) {
            Some((_, true)) => Err(KeyvalError::Freed { keyval: k }),
            Some((c, false)) => Ok(c),
            None => Err(KeyvalError::Unknown { keyval: k }),
        }
    }

    /// Free `k` (`MPI_Comm_free_keyval`): no new values, and forgotten once
    /// no value under it remains (`in_use`). A keyval freed and still in
    /// use may be freed again (a delete callback freeing its own keyval):
    /// nothing changes.
    pub fn free(&mut self, k: KeyvalId, in_use: impl Fn(KeyvalId) -> bool) -> Result<(), KeyvalError> {
        if k < self.first {
            return Err(KeyvalError::Predefined { keyval: k });
        }
        match self.entries.get_mut(&k) {
            Some(e) => e.1 = true,
            None => return Err(KeyvalError::Unknown { keyval: k }),
        }
        self.sweep(in_use);
        Ok(())
    }

    /// Forget the freed keyvals no value uses any more (`in_use`): their
    /// records are kept only for the delete callbacks of values still set,
    /// so a program making and freeing keyvals in a loop holds none.
    pub fn sweep(&mut self, in_use: impl Fn(KeyvalId) -> bool) {
        self.entries.retain(|k, (_, freed)| !*freed || in_use(*k));
    }

    /// How many keyvals exist.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether none exists.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// The values cached on one object, in the order they were set.
#[derive(Clone, Debug)]
pub struct Attrs<V> {
    list: Vec<(KeyvalId, V)>,
}

impl<V> Default for Attrs<V> {
    fn default() -> Attrs<V> {
        Attrs { list: Vec::new() }
    }
}

impl<V> Attrs<V> {
    /// Set `v` under `k`: the value it replaces, which the caller deletes
    /// (§7.7.2: the old value's delete callback runs).
    pub fn set(&mut self, k: KeyvalId, v: V) -> Option<V> {
        let old = self.remove(k);
        self.list.push((k, v));
        old
    }

    /// The value under `k`.
    pub fn get(&self, k: KeyvalId) -> Option<&V> {
        self.list.iter().find(|(n, _)| *n == k).map(|(_, v)| v)
    }

    /// Take the value under `k` out.
    pub fn remove(&mut self, k: KeyvalId) -> Option<V> {
        let at = self.list.iter().position(|(n, _)| *n == k)?;
        Some(self.list.remove(at).1)
    }

    /// Whether a value is set under `k`.
    pub fn uses(&self, k: KeyvalId) -> bool {
        self.list.iter().any(|(n, _)| *n == k)
    }

    /// Every value, in the order of their deletion when the object is freed:
    /// the last set first.
    pub fn take_all(&mut self) -> Vec<(KeyvalId, V)> {
        let mut all = std::mem::take(&mut self.list);
        all.reverse();
        all
    }

    /// The values, in the order they were set.
    pub fn iter(&self) -> impl Iterator<Item = (KeyvalId, &V)> {
        self.list.iter().map(|(k, v)| (*k, v))
    }

    /// Whether no value is set.
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }
}

/// What a communicator's duplicate gets of a value (the copy callback,
/// §7.7.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnDuplicate {
    /// A clone (`MPI_COMM_DUP_FN`, or a callback that copies).
    Clone,
    /// Nothing (`MPI_COMM_NULL_COPY_FN`).
    Drop,
}

/// A key under which a Rust program caches values of type `T` on
/// communicators (`MPI_Comm_create_keyval`, §7.7.2). Dropping the keyval
/// frees it: the values set under it stay until deleted or until their
/// communicators go.
pub struct Keyval<T> {
    id: Rc<OnDuplicate>,
    _t: PhantomData<fn() -> T>,
}

impl<T: Clone + 'static> Keyval<T> {
    /// A keyval whose values a communicator's duplicate gets as `on_dup`
    /// says.
    pub fn new(on_dup: OnDuplicate) -> Keyval<T> {
        Keyval { id: Rc::new(on_dup), _t: PhantomData }
    }
}

/// A value cached on a communicator by the Rust API: its keyval (kept
/// alive with it, so no other keyval can take its place) and the value.
pub(crate) struct Cached {
    key: Rc<OnDuplicate>,
    value: Box<dyn Any>,
    clone: fn(&dyn Any) -> Option<Box<dyn Any>>,
}

/// The values a communicator caches through the Rust API (one per
/// communicator, shared by its handles).
#[derive(Default)]
pub(crate) struct CommAttrs {
    list: std::cell::RefCell<Vec<Cached>>,
}

fn clone_as<T: Clone + 'static>(v: &dyn Any) -> Option<Box<dyn Any>> {
    v.downcast_ref::<T>().map(|t| Box::new(t.clone()) as Box<dyn Any>)
}

impl CommAttrs {
    /// Set `v` under `k`, replacing (and dropping) any value there.
    pub(crate) fn set<T: Clone + 'static>(&self, k: &Keyval<T>, v: T) -> Option<T> {
        let old = self.delete(k);
        self.list.borrow_mut().push(Cached { key: k.id.clone(), value: Box::new(v), clone: clone_as::<T> });
        old
    }

    /// A clone of the value under `k`.
    pub(crate) fn get<T: Clone + 'static>(&self, k: &Keyval<T>) -> Option<T> {
        let list = self.list.borrow();
        let c = list.iter().find(|c| Rc::ptr_eq(&c.key, &k.id))?;
        c.value.downcast_ref::<T>().cloned()
    }

    /// Take the value under `k` out.
    pub(crate) fn delete<T: Clone + 'static>(&self, k: &Keyval<T>) -> Option<T> {
        let c = {
            let mut list = self.list.borrow_mut();
            let at = list.iter().position(|c| Rc::ptr_eq(&c.key, &k.id))?;
            list.remove(at)
        };
        c.value.downcast::<T>().ok().map(|t| *t)
    }

    /// Give a duplicate what it gets (§7.4.2): a clone of each value whose
    /// keyval says so, in the order they were set (the duplicate's own
    /// values, if any, are replaced).
    pub(crate) fn copy_into(&self, to: &CommAttrs) {
        if std::ptr::eq(self, to) {
            return;
        }
        let copied: Vec<Cached> = self
            .list
            .borrow()
            .iter()
            .filter(|c| *c.key == OnDuplicate::Clone)
            .filter_map(|c| (c.clone)(&*c.value).map(|value| Cached { key: c.key.clone(), value, clone: c.clone }))
            .collect();
        let old = std::mem::replace(&mut *to.list.borrow_mut(), copied);
        drop(old);
    }
}

impl Drop for CommAttrs {
    /// The values go last set first, as the standard deletes them when a
    /// communicator is freed (§7.7.2).
    fn drop(&mut self) {
        let list = self.list.get_mut();
        while list.pop().is_some() {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_freed_keyval_lives_while_a_value_uses_it() {
        let mut ks: Keyvals<&str> = Keyvals::new(1000);
        let a = ks.create("a").unwrap();
        let b = ks.create("b").unwrap();
        assert_eq!((a, b), (1000, 1001));
        assert_eq!(ks.free(7, |_| false), Err(KeyvalError::Predefined { keyval: 7 }));
        assert_eq!(ks.free(1234, |_| false), Err(KeyvalError::Unknown { keyval: 1234 }));
        let mut attrs: Attrs<u32> = Attrs::default();
        assert_eq!(attrs.set(a, 1), None);
        ks.free(a, |k| attrs.uses(k)).unwrap();
        assert_eq!(ks.get(a), Ok(&"a"));
        assert_eq!(ks.settable(a), Err(KeyvalError::Freed { keyval: a }));
        ks.free(a, |k| attrs.uses(k)).unwrap();
        assert_eq!(attrs.remove(a), Some(1));
        ks.sweep(|k| attrs.uses(k));
        assert_eq!(ks.get(a), Err(KeyvalError::Unknown { keyval: a }));
        assert_eq!(ks.free(a, |_| false), Err(KeyvalError::Unknown { keyval: a }));
        assert_eq!(ks.len(), 1);
    }

    #[test]
    fn values_replace_each_other_and_go_last_set_first() {
        let mut attrs: Attrs<&str> = Attrs::default();
        assert_eq!(attrs.set(3, "x"), None);
        assert_eq!(attrs.set(1, "y"), None);
        assert_eq!(attrs.set(3, "z"), Some("x"));
        assert_eq!(attrs.get(3), Some(&"z"));
        assert_eq!(attrs.iter().collect::<Vec<_>>(), vec![(1, &"y"), (3, &"z")]);
        assert_eq!(attrs.take_all(), vec![(3, "z"), (1, "y")]);
        assert!(attrs.is_empty());
    }

    #[test]
    fn a_duplicate_gets_clones_of_the_values_its_keyvals_copy() {
        let copied: Keyval<Vec<u8>> = Keyval::new(OnDuplicate::Clone);
        let dropped: Keyval<String> = Keyval::new(OnDuplicate::Drop);
        let attrs = CommAttrs::default();
        assert_eq!(attrs.set(&copied, vec![1, 2]), None);
        assert_eq!(attrs.set(&dropped, "mine".to_string()), None);
        assert_eq!(attrs.set(&copied, vec![3]), Some(vec![1, 2]));
        let dup = CommAttrs::default();
        attrs.copy_into(&dup);
        assert_eq!(dup.get(&copied), Some(vec![3]));
        assert_eq!(dup.get(&dropped), None);
        assert_eq!(attrs.get(&dropped).as_deref(), Some("mine"));
        // A keyval of the same type is another key.
        let other: Keyval<Vec<u8>> = Keyval::new(OnDuplicate::Clone);
        assert_eq!(attrs.get(&other), None);
        assert_eq!(attrs.delete(&copied), Some(vec![3]));
        assert_eq!(attrs.get(&copied), None);
        assert_eq!(dup.get(&copied), Some(vec![3]));
    }

    #[test]
    fn values_are_dropped_when_their_communicator_goes_last_set_first() {
        thread_local!(static ORDER: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) });
        #[derive(Clone)]
        struct Noisy(u8);
        impl Drop for Noisy {
            fn drop(&mut self) {
                ORDER.with(|o| o.borrow_mut().push(self.0));
            }
        }
        let (a, b): (Keyval<Noisy>, Keyval<Noisy>) = (Keyval::new(OnDuplicate::Drop), Keyval::new(OnDuplicate::Drop));
        let attrs = CommAttrs::default();
        attrs.set(&a, Noisy(1));
        attrs.set(&b, Noisy(2));
        drop(attrs);
        assert_eq!(ORDER.with(|o| o.borrow().clone()), vec![2, 1]);
    }
}
