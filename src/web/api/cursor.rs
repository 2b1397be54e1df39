//! Cursor pagination: `?cursor=…&limit=…` in, `next_cursor` out. The cursor is the last id of a
//! page in unpadded base64url, opaque to the client; a cursor the API never gave is a 400.

use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};

use super::problem::ApiError;

/// The most items one page answers, and how many without `limit`.
const MAX_PAGE: u32 = 100;
const DEFAULT_PAGE: u32 = 25;

/// A page asked for: older than `before`, at most `limit`.
pub struct Page {
    pub before: Option<i64>,
    limit: u32,
}

impl Page {
    pub fn of(cursor: Option<&str>, limit: Option<u32>) -> Result<Self, ApiError> {
        let before = cursor.map(decode).transpose()?;
        Ok(Self { before, limit: limit.unwrap_or(DEFAULT_PAGE).min(MAX_PAGE) })
    }

    /// How many to ask the service for: one more than the page, to know whether another follows.
    pub fn ask(&self) -> i64 {
        i64::from(self.limit) + 1
    }

    /// The page of `items` (newest first) and the cursor of the next, if there is one.
    pub fn cut<T>(&self, mut items: Vec<T>, id: impl Fn(&T) -> i64) -> (Vec<T>, Option<String>) {
        let more = items.len() > self.limit as usize;
        items.truncate(self.limit as usize);
        let next = if more { items.last().map(|item| encode(id(item))) } else { None };
        (items, next)
    }
}

fn encode(id: i64) -> String {
    URL_SAFE_NO_PAD.encode(id.to_string())
}

fn decode(cursor: &str) -> Result<i64, ApiError> {
    let bytes = URL_SAFE_NO_PAD.decode(cursor).ok();
    let id = bytes.and_then(|b| String::from_utf8(b).ok()).and_then(|text| text.parse().ok());
    id.ok_or_else(|| ApiError::of(poem::http::StatusCode::BAD_REQUEST, "cursor: not one this API gave"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cursor_comes_back_as_the_id_it_was_made_of_and_any_other_text_is_refused() {
        assert_eq!(decode(&encode(42)).unwrap(), 42);
        assert!(decode("not a cursor!").is_err());
        assert!(decode(&URL_SAFE_NO_PAD.encode("abc")).is_err());
    }

    #[test]
    fn a_page_names_the_next_only_when_more_came_back_than_it_holds() {
        let page = Page::of(None, Some(2)).unwrap();
        assert_eq!(page.ask(), 3);
        assert_eq!(page.cut(vec![9, 8, 7], |id| *id), (vec![9, 8], Some(encode(8))));
        assert_eq!(page.cut(vec![9, 8], |id| *id), (vec![9, 8], None));
    }
}
