//! How the sealed reasoning travels on the OpenAI and Anthropic surfaces.
//!
//! The seal binds every value to a thread id and a reasoning message id
//! (`thinkwire_seal::Binding`). AG-UI carries both ids itself; these APIs
//! are stateless and have no thread, and Anthropic's `signature` is a bare
//! string. So every carrier — chat completions'
//! `reasoning_details[].data`, responses' `encrypted_content`, Anthropic's
//! `signature` and `redacted_thinking.data` — holds the same string:
//!
//! ```text
//! tw1.<reasoning message id>.<sealed envelope (base64url)>
//! ```
//!
//! and every run on these surfaces uses the one thread id [`THREAD_ID`].
//! A value therefore opens on any of the three surfaces (one seal, many
//! carriers), never on AG-UI threads, and a value whose text, envelope or
//! message id was altered does not authenticate.
//!
//! `pack("reasoning-msg-1", "AQID")` is `tw1.reasoning-msg-1.AQID`.

/// The thread every run of the OpenAI and Anthropic surfaces belongs to.
pub const THREAD_ID: &str = "thinkwire:v1";

const PREFIX: &str = "tw1.";

/// The carrier string for a value sealed for `message_id`.
pub fn pack(message_id: &str, sealed: &str) -> String {
    format!("{PREFIX}{message_id}.{sealed}")
}

/// The message id and sealed envelope of a carrier, or `None` when the
/// string is not one. Envelopes are base64url (no `.`), so the last `.`
/// separates them from the id.
pub fn unpack(carrier: &str) -> Option<(&str, &str)> {
    let rest = carrier.strip_prefix(PREFIX)?;
    let (id, sealed) = rest.rsplit_once('.')?;
    (!id.is_empty() && !sealed.is_empty()).then_some((id, sealed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packs_and_unpacks() {
        let packed = pack("reasoning-msg-abc", "AAEC-_x");
        assert_eq!(packed, "tw1.reasoning-msg-abc.AAEC-_x");
        assert_eq!(unpack(&packed), Some(("reasoning-msg-abc", "AAEC-_x")));
    }

    #[test]
    fn refuses_what_is_not_a_carrier() {
        for bad in [
            "",
            "tw1.",
            "tw1.id.",
            "tw1..AAA",
            "xx.id.AAA",
            "AAAA",
            "tw1.noseparator",
        ] {
            assert_eq!(unpack(bad), None, "{bad:?}");
        }
    }
}
