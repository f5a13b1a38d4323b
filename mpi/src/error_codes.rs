//! Error classes, codes and strings a program adds (MPI 4.1 §9.5):
//! `MPI_Add_error_class`, `MPI_Add_error_code`, `MPI_Add_error_string`
//! and MPI 4.1's `MPI_Remove_error_*`.
//!
//! Values count up from the last predefined code; an added class is its
//! own class, an added code has the class it was added to, and
//! `MPI_LASTUSEDCODE` is the largest value handed out. A class with codes
//! cannot be removed, nor a value with a string, and a predefined value's
//! string cannot change. The table is plain data: the C library keeps one
//! per process, apart from the library's state, since `MPI_Error_class`
//! and `MPI_Error_string` may be called at any time.

use std::collections::BTreeMap;

/// What an addition or removal refuses (`MPI_ERR_ARG` in C).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ErrorCodeError {
    /// Every value an `int` can hold is taken.
    #[error("no error code is left")]
    Exhausted,
    /// A code added to a value that is no class.
    #[error("{value} is not an error class")]
    NotAClass {
        /// The value given.
        value: i32,
    },
    /// A value this table did not hand out (or handed out as the other
    /// kind).
    #[error("{value} is not {what}")]
    NotAdded {
        /// The value given.
        value: i32,
        /// "an added error class", "an added error code", "an added error
        /// code or class (a predefined one's string cannot change)".
        what: &'static str,
    },
    /// A class removed while codes of it remain.
    #[error("error class {class} still has codes: remove them first")]
    HasCodes {
        /// The class.
        class: i32,
    },
    /// A value removed while it has a string.
    #[error("{value} still has a string: MPI_Remove_error_string first (MPI 4.1 §9.5)")]
    HasString {
        /// The value.
        value: i32,
    },
    /// A string longer than `MPI_MAX_ERROR_STRING` - 1 characters.
    #[error("the string has {len} characters; at most {most} fit")]
    TooLong {
        /// Its characters.
        len: usize,
        /// The most.
        most: usize,
    },
}

/// The classes, codes and strings a program added.
#[derive(Clone, Debug)]
pub struct ErrorCodes {
    /// The last predefined code.
    predefined_last: i32,
    /// The largest value handed out (`MPI_LASTUSEDCODE`).
    last: i32,
    /// Each added value's class (an added class is its own).
    class_of: BTreeMap<i32, i32>,
    strings: BTreeMap<i32, String>,
    /// The longest string.
    max_string: usize,
}

impl ErrorCodes {
    /// A table whose predefined codes are `0..=predefined_last`, taking
    /// strings of at most `max_string` characters.
    pub fn new(predefined_last: i32, max_string: usize) -> ErrorCodes {
        ErrorCodes {
            predefined_last,
            last: predefined_last,
            class_of: BTreeMap::new(),
            strings: BTreeMap::new(),
            max_string,
        }
    }

    /// The class of `code`: a predefined code is its own class, an added
    /// one has its class; `None` for a value that is neither.
    pub fn class_of(&self, code: i32) -> Option<i32> {
        if (0..=self.predefined_last).contains(&code) {
            return Some(code);
        }
        self.class_of.get(&code).copied()
    }

    /// The string of an added value (empty when none was given); `None`
    /// for a value this table did not hand out.
    pub fn string(&self, code: i32) -> Option<&str> {
        self.class_of.contains_key(&code).then(|| self.strings.get(&code).map_or("", String::as_str))
    }

    /// The largest value in use (`MPI_LASTUSEDCODE`).
    pub fn last_used(&self) -> i32 {
        self.last
    }

    fn add(&mut self, class: Option<i32>) -> Result<i32, ErrorCodeError> {
        let v = self.last.checked_add(1).ok_or(ErrorCodeError::Exhausted)?;
        self.last = v;
        self.class_of.insert(v, class.unwrap_or(v));
        Ok(v)
    }

    /// A new class (`MPI_Add_error_class`).
    pub fn add_class(&mut self) -> Result<i32, ErrorCodeError> {
        self.add(None)
    }

    /// A new code of `class`, predefined or added (`MPI_Add_error_code`).
    pub fn add_code(&mut self, class: i32) -> Result<i32, ErrorCodeError> {
        if self.class_of(class) != Some(class) {
            return Err(ErrorCodeError::NotAClass { value: class });
        }
        self.add(Some(class))
    }

    /// Give added `code` (or class) its string (`MPI_Add_error_string`).
    pub fn set_string(&mut self, code: i32, s: &str) -> Result<(), ErrorCodeError> {
        if s.len() > self.max_string {
            return Err(ErrorCodeError::TooLong { len: s.len(), most: self.max_string });
        }
        if !self.class_of.contains_key(&code) {
            let what = "an added error code or class (a predefined one's string cannot change)";
            return Err(ErrorCodeError::NotAdded { value: code, what });
        }
        self.strings.insert(code, s.to_string());
        Ok(())
    }

    /// Take added `code`'s string away (`MPI_Remove_error_string`).
    pub fn remove_string(&mut self, code: i32) -> Result<(), ErrorCodeError> {
        if !self.class_of.contains_key(&code) {
            return Err(ErrorCodeError::NotAdded { value: code, what: "an added error code or class" });
        }
        self.strings.remove(&code);
        Ok(())
    }

    /// Remove added `value`, a class when `class` (`MPI_Remove_error_class`,
    /// `MPI_Remove_error_code`): refused for a class that still has codes
    /// and for a value that still has a string.
    pub fn remove(&mut self, value: i32, class: bool) -> Result<(), ErrorCodeError> {
        let is_class = self.class_of.get(&value) == Some(&value);
        if !self.class_of.contains_key(&value) || is_class != class {
            let what = if class { "an added error class" } else { "an added error code" };
            return Err(ErrorCodeError::NotAdded { value, what });
        }
        if class && self.class_of.iter().any(|(&c, &k)| k == value && c != value) {
            return Err(ErrorCodeError::HasCodes { class: value });
        }
        if self.strings.contains_key(&value) {
            return Err(ErrorCodeError::HasString { value });
        }
        self.class_of.remove(&value);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_codes_and_strings_follow_their_rules() {
        let mut t = ErrorCodes::new(60, 8);
        assert_eq!((t.class_of(13), t.class_of(61), t.last_used()), (Some(13), None, 60));
        let c = t.add_class().expect("class");
        let k = t.add_code(c).expect("code");
        let p = t.add_code(13).expect("a code of a predefined class");
        assert_eq!((c, k, p, t.last_used()), (61, 62, 63, 63));
        assert_eq!((t.class_of(c), t.class_of(k), t.class_of(p)), (Some(61), Some(61), Some(13)));
        assert_eq!(t.add_code(k), Err(ErrorCodeError::NotAClass { value: 62 }));
        assert_eq!(t.string(k), Some(""));
        assert_eq!(t.string(13), None);
        t.set_string(k, "mine").expect("string");
        assert_eq!(t.string(k), Some("mine"));
        assert!(matches!(t.set_string(13, "no"), Err(ErrorCodeError::NotAdded { value: 13, .. })));
        assert_eq!(t.set_string(k, "too long!"), Err(ErrorCodeError::TooLong { len: 9, most: 8 }));
        // A class with codes, a value with a string, the wrong kind: refused.
        assert_eq!(t.remove(c, true), Err(ErrorCodeError::HasCodes { class: 61 }));
        assert_eq!(t.remove(k, false), Err(ErrorCodeError::HasString { value: 62 }));
        assert!(matches!(t.remove(k, true), Err(ErrorCodeError::NotAdded { value: 62, .. })));
        t.remove_string(k).expect("remove the string");
        t.remove(k, false).expect("remove the code");
        t.remove(c, true).expect("remove the class");
        assert_eq!((t.class_of(c), t.string(c), t.last_used()), (None, None, 63));
        // Values are never handed out twice.
        assert_eq!(t.add_class(), Ok(64));
    }

    #[test]
    fn the_last_int_is_the_last_code() {
        let mut t = ErrorCodes::new(i32::MAX - 1, 8);
        assert_eq!(t.add_class(), Ok(i32::MAX));
        assert_eq!(t.add_class(), Err(ErrorCodeError::Exhausted));
    }
}
