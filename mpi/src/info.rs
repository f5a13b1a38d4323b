//! Info objects (MPI 4.1 §10): ordered `key`/`value` string pairs that
//! carry hints. Keys are at most [`MAX_KEY`] characters and values at
//! most [`MAX_VALUE`] (the limits of the MPI 5.0 ABI's
//! `MPI_MAX_INFO_KEY - 1` and `MPI_MAX_INFO_VAL - 1`); leading and
//! trailing blanks are not part of either (§10).

use crate::{MpiError, Result};

/// Longest key, in bytes.
pub const MAX_KEY: usize = 255;
/// Longest value, in bytes.
pub const MAX_VALUE: usize = 1023;

/// An info object: pairs in the order their keys were first set.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Info {
    pairs: Vec<(String, String)>,
}

/// A key or value trimmed of blanks, checked against its limit.
/// `text` without the spaces at its ends, if it is 1 to `max` characters.
fn checked(text: &str, max: usize) -> Option<String> {
    let t = text.trim_matches(' ');
    (!t.is_empty() && t.len() <= max).then(|| t.to_string())
}

/// `key`, checked (`MPI_ERR_INFO_KEY`).
fn checked_key(key: &str) -> Result<String> {
    checked(key, MAX_KEY).ok_or_else(|| MpiError::InfoKey { key: key.trim_matches(' ').into(), max: MAX_KEY })
}

impl Info {
    /// An empty info object (`MPI_Info_create`).
    pub fn new() -> Info {
        Info::default()
    }

    /// Set `key` to `value` (`MPI_Info_set`): replaced in place if the
    /// key is there, else added last.
    pub fn set(&mut self, key: &str, value: &str) -> Result<()> {
        let k = checked_key(key)?;
        let v = checked(value, MAX_VALUE).ok_or_else(|| MpiError::InfoValue {
            key: k.clone(),
            value: value.into(),
            takes: format!("a value of 1 to {MAX_VALUE} characters"),
        })?;
        match self.pairs.iter_mut().find(|p| p.0 == k) {
            Some(p) => p.1 = v,
            None => self.pairs.push((k, v)),
        }
        Ok(())
    }

    /// Remove `key` (`MPI_Info_delete`): an error if it is not there.
    pub fn delete(&mut self, key: &str) -> Result<()> {
        let k = checked_key(key)?;
        let before = self.pairs.len();
        self.pairs.retain(|p| p.0 != k);
        if self.pairs.len() == before {
            return Err(MpiError::InfoNoKey { key: k });
        }
        Ok(())
    }

    /// The value of `key` (`MPI_Info_get_string`).
    pub fn get(&self, key: &str) -> Result<Option<&str>> {
        let k = checked_key(key)?;
        Ok(self.pairs.iter().find(|p| p.0 == k).map(|p| p.1.as_str()))
    }

    /// Number of keys (`MPI_Info_get_nkeys`).
    pub fn len(&self) -> usize {
        self.pairs.len()
    }

    /// No keys.
    pub fn is_empty(&self) -> bool {
        self.pairs.is_empty()
    }

    /// Key number `n`, in the order keys were first set (`MPI_Info_get_nthkey`).
    pub fn nth_key(&self, n: usize) -> Result<&str> {
        self.pairs
            .get(n)
            .map(|p| p.0.as_str())
            .ok_or_else(|| crate::error::ArgError::InfoKeyNumber { n, keys: self.pairs.len() }.into())
    }

    /// Whether `key` is set to `value` (a hint test).
    pub fn says(&self, key: &str, value: &str) -> bool {
        self.pairs.iter().any(|(k, v)| k == key && v == value)
    }

    /// The pairs, in order.
    pub fn pairs(&self) -> impl Iterator<Item = (&str, &str)> {
        self.pairs.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_keep_their_first_place_and_limits_are_checked() {
        let mut i = Info::new();
        i.set(" a ", "1").expect("set");
        i.set("b", "2").expect("set");
        i.set("a", "3").expect("reset");
        assert_eq!(i.nth_key(0).expect("key 0"), "a");
        assert_eq!(i.get("a").expect("get"), Some("3"));
        assert!(matches!(i.set(&"k".repeat(MAX_KEY + 1), "v"), Err(MpiError::InfoKey { max: MAX_KEY, .. })));
        assert!(matches!(i.set("k", ""), Err(MpiError::InfoValue { key, .. }) if key == "k"));
        assert_eq!(i.delete(" c ").unwrap_err().to_string(), "the info has no key \"c\"");
        assert!(matches!(i.delete("c"), Err(MpiError::InfoNoKey { key }) if key == "c"));
        i.delete("a").expect("delete");
        assert_eq!((i.len(), i.nth_key(0).expect("key 0")), (1, "b"));
    }
}
