//! The share list's filter by outcome: plain links carrying `?status=`, so it works without
//! JavaScript and survives the "older" link. A value the list does not know (an old bookmark, a
//! hand-edited address) shows every share, and the page marks "all" as what it shows.

use crate::{i18n::Text, share::sender::SenderStatus};

/// Which shares the list shows: all, or those with one outcome.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Filter(pub Option<SenderStatus>);

impl Filter {
    /// The filter a `?status=` value asks for; anything unknown is all.
    pub fn from_query(status: Option<&str>) -> Self {
        Self(status.and_then(|code| SenderStatus::parse(code).ok()))
    }

    /// The query that keeps this filter on another link of the list: empty or `status=…&`.
    pub fn query(self) -> String {
        self.0.map(|status| format!("status={}&", status.code())).unwrap_or_default()
    }
}

/// One choice of the filter as the template shows it.
pub struct FilterLink {
    /// The query after `/shares`: empty for all, else `?status=…`.
    pub query: String,
    pub text: &'static str,
    pub current: bool,
}

/// "All", then one link per outcome the list shows, the current one marked.
pub fn links(t: &'static Text, current: Filter) -> Vec<FilterLink> {
    let all = FilterLink { query: String::new(), text: t.dashboard.list.filter_all, current: current.0.is_none() };
    let outcomes = SenderStatus::ALL.into_iter().map(|status| FilterLink {
        query: format!("?status={}", status.code()),
        text: super::status_text(t, status, false),
        current: current.0 == Some(status),
    });
    std::iter::once(all).chain(outcomes).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::i18n::Lang;

    #[test]
    fn an_unknown_status_shows_all_and_a_known_one_is_kept_on_other_links() {
        assert_eq!(Filter::from_query(Some("nonsense")), Filter(None));
        assert_eq!(Filter::from_query(None).query(), "");
        let locked = Filter::from_query(Some("locked"));
        assert_eq!(locked, Filter(Some(SenderStatus::Locked)));
        assert_eq!(locked.query(), "status=locked&");
        let marked: Vec<_> =
            links(Lang::En.text(), locked).into_iter().filter(|l| l.current).map(|l| l.query).collect();
        assert_eq!(marked, ["?status=locked"]);
    }
}
