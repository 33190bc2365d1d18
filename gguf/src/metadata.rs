//! Typed access to metadata: required and optional values of each kind, and
//! the `{architecture}.*` keys. A key of the wrong type is an error naming
//! the key and both types, never a silent default.

use crate::error::{GgufError, GgufErrorKind};
use crate::file::GgufFile;
use crate::value::MetadataValue;

impl GgufFile {
    fn require(&self, key: &str) -> Result<&MetadataValue, GgufError> {
        self.get(key)
            .ok_or_else(|| self.error(GgufErrorKind::MissingKey(key.to_owned())))
    }

    fn wrong_type(&self, key: &str, expected: &'static str, found: &MetadataValue) -> GgufError {
        self.error(GgufErrorKind::WrongType {
            key: key.to_owned(),
            expected,
            found: found.type_name(),
        })
    }

    /// A required string.
    pub fn get_str(&self, key: &str) -> Result<&str, GgufError> {
        let v = self.require(key)?;
        v.as_str().ok_or_else(|| self.wrong_type(key, "string", v))
    }

    /// A required non-negative integer of any width.
    pub fn get_u64(&self, key: &str) -> Result<u64, GgufError> {
        let v = self.require(key)?;
        v.as_u64()
            .ok_or_else(|| self.wrong_type(key, "non-negative integer", v))
    }

    /// A required number (float or integer).
    pub fn get_f64(&self, key: &str) -> Result<f64, GgufError> {
        let v = self.require(key)?;
        v.as_f64().ok_or_else(|| self.wrong_type(key, "number", v))
    }

    /// A required bool.
    pub fn get_bool(&self, key: &str) -> Result<bool, GgufError> {
        let v = self.require(key)?;
        v.as_bool().ok_or_else(|| self.wrong_type(key, "bool", v))
    }

    /// A required array of any element type.
    pub fn get_array(&self, key: &str) -> Result<&[MetadataValue], GgufError> {
        let v = self.require(key)?;
        v.as_array().ok_or_else(|| self.wrong_type(key, "array", v))
    }

    /// A required array of strings.
    pub fn get_str_array(&self, key: &str) -> Result<Vec<&str>, GgufError> {
        let v = self.require(key)?;
        let items = v
            .as_array()
            .ok_or_else(|| self.wrong_type(key, "array[string]", v))?;
        items
            .iter()
            .map(|item| {
                item.as_str()
                    .ok_or_else(|| self.wrong_type(key, "array[string]", v))
            })
            .collect()
    }

    /// An optional non-negative integer: `Ok(None)` when absent, an error
    /// when present with another type.
    pub fn opt_u64(&self, key: &str) -> Result<Option<u64>, GgufError> {
        self.get(key).map(|_| self.get_u64(key)).transpose()
    }

    /// An optional number; see [`GgufFile::opt_u64`].
    pub fn opt_f64(&self, key: &str) -> Result<Option<f64>, GgufError> {
        self.get(key).map(|_| self.get_f64(key)).transpose()
    }

    /// An optional bool; see [`GgufFile::opt_u64`].
    pub fn opt_bool(&self, key: &str) -> Result<Option<bool>, GgufError> {
        self.get(key).map(|_| self.get_bool(key)).transpose()
    }

    /// An optional string; see [`GgufFile::opt_u64`].
    pub fn opt_str(&self, key: &str) -> Result<Option<&str>, GgufError> {
        self.get(key).map(|_| self.get_str(key)).transpose()
    }

    /// `general.architecture`, e.g. `llama`, `qwen2`, `qwen3`.
    pub fn architecture(&self) -> Result<&str, GgufError> {
        self.get_str("general.architecture")
    }

    /// `{architecture}.{suffix}` as an integer, e.g. `block_count`.
    pub fn get_arch_u64(&self, suffix: &str) -> Result<u64, GgufError> {
        self.get_u64(&format!("{}.{suffix}", self.architecture()?))
    }

    /// `{architecture}.{suffix}` as an optional integer.
    pub fn opt_arch_u64(&self, suffix: &str) -> Result<Option<u64>, GgufError> {
        self.opt_u64(&format!("{}.{suffix}", self.architecture()?))
    }

    /// `{architecture}.{suffix}` as an optional number, e.g.
    /// `rope.freq_base`.
    pub fn opt_arch_f64(&self, suffix: &str) -> Result<Option<f64>, GgufError> {
        self.opt_f64(&format!("{}.{suffix}", self.architecture()?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{sample, tmp_file};

    #[test]
    fn typed_getters_name_the_key() {
        let path = tmp_file("getters.gguf", &sample());
        let f = GgufFile::open(&path).unwrap();
        let e = f.get_u64("general.architecture").unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains("general.architecture") && msg.contains("string"),
            "{msg}"
        );
        assert!(msg.contains("getters.gguf"), "{msg}");
        let e = f.get_str("absent.key").unwrap_err();
        assert!(matches!(e.kind(), GgufErrorKind::MissingKey(k) if k == "absent.key"));
        assert_eq!(f.opt_u64("absent.key").unwrap(), None);
        assert!(f.opt_u64("general.architecture").is_err());
    }
}
