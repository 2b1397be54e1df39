//! The `Upload-Metadata` header (tus core): comma-separated pairs of a key and an optional base64
//! value, keys unique and without spaces or commas.

use std::collections::HashMap;

use base64::{Engine, engine::general_purpose::STANDARD};

/// Longest header accepted: names and types are short; the rest is not ours to keep.
const MAX_HEADER_BYTES: usize = 8 * 1024;

/// The parsed header, and the raw text to echo in HEAD.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Metadata {
    pub raw: Option<String>,
    values: HashMap<String, String>,
}

#[derive(Debug, PartialEq, Eq, thiserror::Error)]
#[error("malformed Upload-Metadata")]
pub struct MalformedMetadata;

impl Metadata {
    /// Parses the header; `None` (absent) is empty metadata.
    pub fn parse(header: Option<&str>) -> Result<Self, MalformedMetadata> {
        let Some(raw) = header else { return Ok(Self::default()) };
        if raw.len() > MAX_HEADER_BYTES {
            return Err(MalformedMetadata);
        }
        let mut values = HashMap::new();
        if !raw.trim().is_empty() {
            for pair in raw.split(',') {
                let (key, value) = parse_pair(pair.trim())?;
                if values.insert(key, value).is_some() {
                    return Err(MalformedMetadata);
                }
            }
        }
        Ok(Self { raw: Some(raw.to_owned()), values })
    }

    /// The metadata a tus client sends with a file's name and type.
    pub fn of_file(name: &str, content_type: &str) -> Self {
        let raw = format!("filename {},filetype {}", STANDARD.encode(name), STANDARD.encode(content_type));
        Self::parse(Some(&raw)).unwrap_or_default()
    }

    /// A value as text (a value that is not UTF-8 counts as absent: only text keys are read).
    pub fn get(&self, key: &str) -> Option<&str> {
        self.values.get(key).map(String::as_str)
    }
}

fn parse_pair(pair: &str) -> Result<(String, String), MalformedMetadata> {
    let mut parts = pair.split(' ');
    let key = parts.next().filter(|k| !k.is_empty()).ok_or(MalformedMetadata)?;
    let value = match parts.next() {
        None => String::new(),
        Some(encoded) => {
            let bytes = STANDARD.decode(encoded).map_err(|_| MalformedMetadata)?;
            String::from_utf8(bytes).unwrap_or_default()
        }
    };
    if parts.next().is_some() || !key.is_ascii() || key.contains(',') {
        return Err(MalformedMetadata);
    }
    Ok((key.to_owned(), value))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_decode_and_a_value_may_be_absent() {
        let header = "filename d29ybGRfZG9taW5hdGlvbl9wbGFuLnBkZg==,is_confidential, filetype YXBwbGljYXRpb24vcGRm";
        let metadata = Metadata::parse(Some(header)).unwrap();
        assert_eq!(metadata.get("filename"), Some("world_domination_plan.pdf"));
        assert_eq!(metadata.get("filetype"), Some("application/pdf"));
        assert_eq!(metadata.get("is_confidential"), Some(""));
        assert_eq!(metadata.raw.as_deref(), Some(header));
        assert_eq!(Metadata::parse(None).unwrap(), Metadata::default());
    }

    #[test]
    fn bad_base64_duplicate_keys_and_extra_parts_are_malformed() {
        for header in ["filename !!!", "a YQ==,a Yg==", "a YQ== Yg==", ",", "a YQ==,,b Yg=="] {
            assert_eq!(Metadata::parse(Some(header)), Err(MalformedMetadata), "{header}");
        }
    }
}
