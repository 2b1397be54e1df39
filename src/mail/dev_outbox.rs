//! Reading back the .eml files of the file outbox, for the development page that lets a newcomer
//! try the whole flow without a mail server. Only what that page shows is decoded: the To and
//! Subject headers and the first text/plain part (7bit, base64 or quoted-printable).

use std::path::Path;

/// One mail as the page shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutboxMail {
    pub to: String,
    pub subject: String,
    pub text: String,
}

/// The newest `limit` mails of the folder, newest first.
pub fn read_outbox(dir: &Path, limit: usize) -> std::io::Result<Vec<OutboxMail>> {
    let mut files: Vec<(std::time::SystemTime, std::path::PathBuf)> = std::fs::read_dir(dir)?
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "eml"))
        .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
        .collect();
    files.sort_by_key(|(modified, _)| std::cmp::Reverse(*modified));
    Ok(files
        .into_iter()
        .take(limit)
        .filter_map(|(_, path)| std::fs::read_to_string(path).ok())
        .map(|raw| parse(&raw))
        .collect())
}

/// Decodes the parts of a message the page needs.
pub fn parse(raw: &str) -> OutboxMail {
    let raw = raw.replace("\r\n", "\n");
    let (headers, body) = raw.split_once("\n\n").unwrap_or((&raw, ""));
    let header = |name: &str| {
        let mut value = String::new();
        let mut inside = false;
        for line in headers.lines() {
            if inside && line.starts_with([' ', '\t']) {
                value.push_str(line.trim_start());
            } else if let Some(rest) = line.strip_prefix(name).and_then(|r| r.strip_prefix(':')) {
                value = rest.trim().to_owned();
                inside = true;
            } else {
                inside = false;
            }
        }
        value
    };
    OutboxMail {
        to: header("To"),
        subject: decode_words(&header("Subject")),
        text: first_text_part(&header("Content-Type"), &header("Content-Transfer-Encoding"), body),
    }
}

fn first_text_part(content_type: &str, encoding: &str, body: &str) -> String {
    if let Some(boundary) = content_type.split("boundary=").nth(1).map(|b| b.trim_matches('"')) {
        for part in body.split(&format!("--{boundary}")).skip(1) {
            let part = part.trim_start_matches('\n');
            let (headers, content) = part.split_once("\n\n").unwrap_or(("", part));
            if headers.to_ascii_lowercase().contains("content-type: text/plain") {
                let encoding =
                    headers.lines().find_map(|l| l.strip_prefix("Content-Transfer-Encoding:")).unwrap_or("7bit").trim();
                return decode_body(encoding, content);
            }
        }
        return String::new();
    }
    decode_body(encoding, body)
}

fn decode_body(encoding: &str, content: &str) -> String {
    match encoding.to_ascii_lowercase().as_str() {
        "base64" => {
            let joined: String = content.lines().map(str::trim).collect();
            String::from_utf8_lossy(&base64_decode(&joined)).into_owned()
        }
        "quoted-printable" => quoted_printable(content),
        _ => content.trim_end().to_owned(),
    }
}

fn quoted_printable(text: &str) -> String {
    let joined = text.replace("=\n", "");
    let bytes = joined.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'='
            && i + 2 < bytes.len()
            && let Ok(byte) = u8::from_str_radix(&joined[i + 1..i + 3], 16)
        {
            out.push(byte);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).trim_end().to_owned()
}

/// RFC 2047 `=?utf-8?b?…?=` words (what lettre writes for non-ASCII subjects).
fn decode_words(value: &str) -> String {
    value
        .split(' ')
        .map(|word| {
            let inner = word.strip_prefix("=?utf-8?b?").or_else(|| word.strip_prefix("=?UTF-8?B?"));
            match inner.and_then(|w| w.strip_suffix("?=")) {
                Some(encoded) => String::from_utf8_lossy(&base64_decode(encoded)).into_owned(),
                None => format!("{word} "),
            }
        })
        .collect::<String>()
        .trim()
        .to_owned()
}

fn base64_decode(text: &str) -> Vec<u8> {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    let (mut buffer, mut bits) = (0u32, 0);
    for byte in text.bytes() {
        let Some(value) = ALPHABET.iter().position(|&b| b == byte) else { continue };
        buffer = (buffer << 6) | value as u32;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((buffer >> bits) as u8);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{i18n::Lang, mail::messages};

    #[test]
    fn a_japanese_code_mail_reads_back_decoded() {
        let from = "watasu <w@example.test>".parse().unwrap();
        let message = messages::code_mail(&from, "r@example.test", Lang::Ja, "012345").unwrap();
        let mail = parse(&String::from_utf8(message.formatted()).unwrap());
        assert_eq!(mail.to, "r@example.test");
        assert_eq!(mail.subject, "watasu 確認コードのお知らせ");
        assert!(mail.text.contains("012345") && mail.text.contains("10分"), "{}", mail.text);
    }

    #[test]
    fn an_english_plain_mail_reads_back() {
        let from = "watasu <w@example.test>".parse().unwrap();
        let message =
            messages::invitation_mail(&from, "n@example.test", Lang::En, "https://x.test/invite/abc").unwrap();
        let mail = parse(&String::from_utf8(message.formatted()).unwrap());
        assert_eq!(mail.subject, "You are invited to send files with watasu");
        assert!(mail.text.contains("https://x.test/invite/abc"), "{}", mail.text);
    }
}
