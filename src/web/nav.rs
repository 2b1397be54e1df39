//! The signed-in header's navigation: which links a sender sees, and which of them is the page
//! they are on (`aria-current`).

use crate::i18n::Text;

/// One link of the header's navigation.
pub struct NavLink {
    pub href: &'static str,
    pub text: &'static str,
    /// `page` on the page itself, `true` on a page below it (a share of the list), else none.
    pub current: Option<&'static str>,
}

/// The links of a signed-in sender's header: the two everyday ones stay in view on a phone; the
/// rest open from a menu there.
pub struct Nav {
    pub main: Vec<NavLink>,
    pub more: Vec<NavLink>,
}

impl Nav {
    pub fn new(t: &'static Text, path: &str, is_admin: bool, dev_outbox: bool) -> Self {
        let main = [("/shares", t.chrome.nav_my_shares), ("/shares/new", t.chrome.nav_new_share)];
        let admin = [
            ("/team", t.chrome.nav_team),
            ("/admin/maintenance", t.chrome.nav_maintenance),
            ("/admin/deletions", t.admin.deletion.nav),
        ];
        let outbox = [("/dev/outbox", t.admin.dev_outbox_title)];
        let account = [("/webhooks", t.webhooks.nav), ("/account", t.chrome.nav_account)];
        let more =
            admin.iter().filter(|_| is_admin).chain(outbox.iter().filter(|_| is_admin && dev_outbox)).chain(&account);
        let every: Vec<_> = main.iter().chain(more).copied().collect();
        let current = current_href(&every, path);
        let link = |&(href, text): &(&'static str, &'static str)| NavLink {
            href,
            text,
            current: (Some(href) == current).then(|| if href == path { "page" } else { "true" }),
        };
        let (main, more) = every.split_at(main.len());
        Self { main: main.iter().map(link).collect(), more: more.iter().map(link).collect() }
    }

    /// A link of the menu is the current page: its summary is marked too.
    pub fn more_is_current(&self) -> bool {
        self.more.iter().any(|link| link.current.is_some())
    }
}

/// The link whose page this path is, or lies below: the longest match, so /shares/new is not
/// also the list's.
fn current_href(links: &[(&'static str, &'static str)], path: &str) -> Option<&'static str> {
    links
        .iter()
        .map(|&(href, _)| href)
        .filter(|href| path == *href || path.strip_prefix(href).is_some_and(|rest| rest.starts_with('/')))
        .max_by_key(|href| href.len())
}

#[cfg(test)]
mod tests {
    use super::Nav;
    use crate::i18n::Lang;

    fn marks(path: &str) -> Vec<(&'static str, &'static str)> {
        let nav = Nav::new(Lang::En.text(), path, true, true);
        nav.main.iter().chain(&nav.more).filter_map(|l| l.current.map(|c| (l.href, c))).collect()
    }

    #[test]
    fn the_page_itself_is_marked_and_a_page_below_marks_its_section() {
        assert_eq!(marks("/shares"), [("/shares", "page")]);
        assert_eq!(marks("/shares/new"), [("/shares/new", "page")]);
        assert_eq!(marks("/shares/42"), [("/shares", "true")]);
        assert_eq!(marks("/admin/deletions/D-1"), [("/admin/deletions", "true")]);
        assert_eq!(marks("/account"), [("/account", "page")]);
        assert!(marks("/sharesx").is_empty());
        assert!(marks("/nowhere").is_empty());
    }

    #[test]
    fn a_sender_sees_no_admin_links() {
        let nav = Nav::new(Lang::En.text(), "/", false, true);
        let hrefs: Vec<_> = nav.main.iter().chain(&nav.more).map(|l| l.href).collect();
        assert_eq!(hrefs, ["/shares", "/shares/new", "/webhooks", "/account"]);
    }
}
