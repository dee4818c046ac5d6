//! Closed sets of values: a spec key whose value is one of a few names is an enum, parsed once
//! when the spec is read, and the names live only in its declaration ([`choice!`]).

/// The message of a value outside a closed set (the loader prefixes the key).
pub fn unknown_value(value: &str, names: &[&str]) -> String {
    format!(
        "unknown value \"{value}\"; expected one of: {}",
        names.join(", ")
    )
}

/// Whether a deserialisation message is [`unknown_value`]'s.
pub(crate) fn is_unknown_value(message: &str) -> bool {
    message.starts_with("unknown value \"")
}

/// An enum of named values, written in the spec as strings:
///
/// ```ignore
/// choice! {
///     /// `local.lr_schedule`
///     pub enum LrSchedule { Round = "round", Epoch = "epoch", Step = "step" }
/// }
/// ```
///
/// gives the enum with `NAMES`, `as_str`, `Display`, and serde as those strings; any other
/// string fails to deserialise with [`unknown_value`]'s message.
#[macro_export]
macro_rules! choice {
    (
        $(#[$meta:meta])*
        pub enum $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident = $text:literal ),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum $name {
            $( $(#[$vmeta])* $variant ),+
        }

        impl $name {
            /// Every value, as the spec writes it.
            pub const NAMES: &'static [&'static str] = &[$($text),+];

            /// The value as the spec writes it.
            pub fn as_str(self) -> &'static str {
                match self {
                    $( $name::$variant => $text ),+
                }
            }

            /// The value the spec writes as `s`.
            pub fn from_name(s: &str) -> Option<Self> {
                match s {
                    $( $text => Some($name::$variant), )+
                    _ => None,
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> ::core::result::Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> ::core::result::Result<Self, D::Error> {
                let s = <String as serde::Deserialize>::deserialize(d)?;
                Self::from_name(&s).ok_or_else(|| {
                    <D::Error as serde::de::Error>::custom($crate::config::unknown_value(
                        &s,
                        Self::NAMES,
                    ))
                })
            }
        }
    };
}
