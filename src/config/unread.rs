//! Keys a run does not read. The parts of fedrun that read a key say when a spec leaves it
//! unread, and why (`data.alpha` without a Dirichlet partition, `local.steps` when
//! `local.epochs` sets the steps, a table that the run's algorithm does not read), through the
//! [`Schema`](super::schema::Schema). A user's `--set` of such a key is an error; a key in the user's
//! file that the run will not read is a warning (a file shared by several runs may set keys some
//! of them do not read); the analysis leaves them out of a run's configuration.

/// A key a run does not read, and why (a phrase that follows "is not read").
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unread {
    pub key: String,
    pub why: String,
}

impl Unread {
    pub fn new(key: impl Into<String>, why: impl Into<String>) -> Self {
        Unread {
            key: key.into(),
            why: why.into(),
        }
    }
}

/// The dotted paths of the values a TOML table sets (`[local] steps = 2` → `local.steps`).
pub fn set_keys(table: &toml::Table) -> Vec<String> {
    fn walk(t: &toml::Table, prefix: &str, out: &mut Vec<String>) {
        for (k, v) in t {
            let p = if prefix.is_empty() {
                k.clone()
            } else {
                format!("{prefix}.{k}")
            };
            match v {
                toml::Value::Table(s) => walk(s, &p, out),
                _ => out.push(p),
            }
        }
    }
    let mut out = Vec::new();
    walk(table, "", &mut out);
    out
}
