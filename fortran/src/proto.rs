//! The C prototypes of `mpi.h` (`abi_def::FUNCTIONS`), parsed into
//! what a binding needs: the return type, the name, and each parameter's
//! type, pointer depth, array shape and name.

/// One parameter of a C prototype.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Param {
    /// `const` in front of the type.
    pub constant: bool,
    /// The type without `const`, pointers or array brackets (`int`, `MPI_Comm`).
    pub base: String,
    /// How many `*` follow the type.
    pub pointers: usize,
    /// The array brackets after the name: `None`, `Some("")` for `x[]`,
    /// `Some("3")` for `x[][3]`.
    pub array: Option<String>,
    /// The parameter's name.
    pub name: String,
}

impl Param {
    /// Whether the parameter points at its values (a pointer or an array).
    pub fn is_pointer(&self) -> bool {
        self.pointers > 0 || self.array.is_some()
    }
}

/// One C prototype.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Proto {
    /// The return type (`int`, `double`, `MPI_Aint`, ...).
    pub ret: String,
    /// The function's name (`MPI_Send`).
    pub name: String,
    /// Its parameters (empty for `(void)`).
    pub params: Vec<Param>,
    /// Whether it ends with `...`.
    pub variadic: bool,
}

/// A C prototype the generator cannot read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ProtoError {
    /// No parameter list.
    #[error("no {paren:?} in {proto:?}")]
    NoParen {
        /// The prototype.
        proto: String,
        /// The parenthesis missing.
        paren: char,
    },
    /// Nothing before the name.
    #[error("no return type in {proto:?}")]
    NoReturnType {
        /// The prototype.
        proto: String,
    },
    /// A parameter without a type or a name.
    #[error("{func}: cannot read the parameter {decl:?}")]
    Param {
        /// The function.
        func: String,
        /// The declaration.
        decl: String,
    },
}

/// Parse `int MPI_Send(const void *buf, int count, ...)`.
pub fn parse(proto: &str) -> Result<Proto, ProtoError> {
    let open = proto.find('(').ok_or_else(|| ProtoError::NoParen { proto: proto.into(), paren: '(' })?;
    let close = proto.rfind(')').ok_or_else(|| ProtoError::NoParen { proto: proto.into(), paren: ')' })?;
    let head = proto[..open].trim();
    let (ret, name) = head.rsplit_once(' ').ok_or_else(|| ProtoError::NoReturnType { proto: proto.into() })?;
    let (ret, name) = (ret.trim().to_string(), name.trim().to_string());
    let mut params = Vec::new();
    let mut variadic = false;
    let inner = proto[open + 1..close].trim();
    if inner != "void" && !inner.is_empty() {
        for p in inner.split(',') {
            let p = p.trim();
            if p == "..." {
                variadic = true;
                continue;
            }
            params.push(param(p).ok_or_else(|| ProtoError::Param { func: name.clone(), decl: p.into() })?);
        }
    }
    Ok(Proto { ret, name, params, variadic })
}

/// Parse one parameter declaration (`const int counts[]`, `char ***argv`);
/// `None` if it has no type or no name.
fn param(decl: &str) -> Option<Param> {
    let (decl, array) = match decl.find('[') {
        Some(i) => {
            let dims = &decl[i..];
            // `[]` or `[][3]`: the inner dimension, if any, is what matters.
            let inner = dims.trim_start_matches("[]").trim_start_matches('[').trim_end_matches(']').to_string();
            (&decl[..i], Some(inner))
        }
        None => (decl, None),
    };
    let constant = decl.trim_start().starts_with("const ");
    let decl = decl.trim_start().trim_start_matches("const ").trim();
    let name_at = decl.rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).map_or(0, |i| i + 1);
    let name = decl[name_at..].to_string();
    let ty = decl[..name_at].trim();
    let pointers = ty.matches('*').count();
    let base = ty.trim_end_matches(['*', ' ']).trim().to_string();
    if name.is_empty() || base.is_empty() {
        return None;
    }
    Some(Param { constant, base, pointers, array, name })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prototypes_parse() {
        let p =
            parse("int MPI_Group_range_incl(MPI_Group group, int n, int ranges[][3], MPI_Group *newgroup)").unwrap();
        assert_eq!(p.name, "MPI_Group_range_incl");
        assert_eq!(p.params[2].array.as_deref(), Some("3"));
        assert_eq!((p.params[3].base.as_str(), p.params[3].pointers), ("MPI_Group", 1));
        let p =
            parse("int MPI_Send(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm)")
                .unwrap();
        assert!(p.params[0].constant && p.params[0].pointers == 1 && p.params[0].base == "void");
        let p = parse("double MPI_Wtime(void)").unwrap();
        assert!(p.params.is_empty() && p.ret == "double");
        let p = parse("int MPI_Pcontrol(const int level, ...)").unwrap();
        assert!(p.variadic && p.params.len() == 1);
        let p = parse("int MPI_Init(int *argc, char ***argv)").unwrap();
        assert_eq!(p.params[1].pointers, 3);
        let p = parse("int MPI_Waitall(int count, MPI_Request array_of_requests[], MPI_Status array_of_statuses[])")
            .unwrap();
        assert_eq!(p.params[1].array.as_deref(), Some(""));
    }
}
