//! `Form`, as poem's but strict about text: a form body whose percent-decoded bytes are not UTF-8
//! is refused with 400. poem decodes them lossily, so a field would silently hold U+FFFD instead of
//! what the browser sent, and the page would answer as if nothing were wrong.

use poem::{Body, FromRequest, Request, RequestBody};
use serde::de::DeserializeOwned;

use super::AppError;

pub struct Form<T>(pub T);

impl<'a, T: DeserializeOwned> FromRequest<'a> for Form<T> {
    async fn from_request(req: &'a Request, body: &mut RequestBody) -> poem::Result<Self> {
        let bytes = body.take()?.into_bytes().await?;
        if !decodes_to_utf8(&bytes) {
            return Err(AppError::BadRequest("a form body that is not UTF-8").into());
        }
        *body = RequestBody::new(Body::from(bytes));
        let poem::web::Form(form) = poem::web::Form::<T>::from_request(req, body).await?;
        Ok(Self(form))
    }
}

/// Whether the body, with every `%XX` decoded, is UTF-8 (`+`, `&` and `=` are ASCII either way).
fn decodes_to_utf8(body: &[u8]) -> bool {
    let hex = |at: usize| body.get(at).and_then(|&b| (b as char).to_digit(16));
    let mut decoded = Vec::with_capacity(body.len());
    let mut i = 0;
    while i < body.len() {
        match (body[i], hex(i + 1), hex(i + 2)) {
            (b'%', Some(high), Some(low)) => {
                decoded.push((high * 16 + low) as u8);
                i += 3;
            }
            (byte, ..) => {
                decoded.push(byte);
                i += 1;
            }
        }
    }
    std::str::from_utf8(&decoded).is_ok()
}

#[cfg(test)]
mod tests {
    use super::decodes_to_utf8;

    #[test]
    fn only_bodies_that_decode_to_utf8_pass() {
        for good in ["", "a=b&c=d", "name=%E6%B8%A1%E3%81%99", "x=%41+b", "odd=%", "odd=%4", "pct=%zz", "raw=渡す"] {
            assert!(decodes_to_utf8(good.as_bytes()), "{good}");
        }
        for bad in [&b"name=%FF"[..], b"name=%E6%B8", b"x=%C3%28", b"raw=\xff"] {
            assert!(!decodes_to_utf8(bad), "{bad:?}");
        }
    }
}
