//! Where an error page leads back to. No header the browser sends is trusted for it (our pages
//! send no `Referer`): the link is derived from the request's own path, rebuilt to stay on this
//! origin, so it can never redirect elsewhere.

use poem::http::Method;

use super::pages::same_origin_path;

/// The page to go back to from an error: the form page a refused POST came from; else the
/// dashboard for a signed-in sender; else the share's link for a page below it; else the start.
pub fn back_link(method: &Method, path: &str, signed_in: bool) -> String {
    let path = same_origin_path(path);
    let segments: Vec<&str> = path.split('/').skip(1).collect();
    if method == Method::POST
        && let Some(form) = form_page(&segments)
    {
        return form;
    }
    if signed_in {
        return "/shares".to_owned();
    }
    match segments.as_slice() {
        ["s", token, _, ..] => format!("/s/{token}"),
        _ => "/".to_owned(),
    }
}

/// The page that holds the form a POST to these segments comes from.
fn form_page(segments: &[&str]) -> Option<String> {
    let page = match segments {
        ["login"] => "/login".to_owned(),
        ["setup", token] => format!("/setup/{token}"),
        ["invite", token] => format!("/invite/{token}"),
        ["account", ..] => "/account".to_owned(),
        ["team", ..] => "/team".to_owned(),
        ["shares", "new"] => "/shares/new".to_owned(),
        ["shares", id, _] => format!("/shares/{id}"),
        ["admin", "deletions", reference, "retry"] => format!("/admin/deletions/{reference}"),
        ["s", token, ..] => format!("/s/{token}"),
        _ => return None,
    };
    Some(page)
}

#[cfg(test)]
mod tests {
    use poem::http::Method;

    use super::back_link;

    #[test]
    fn a_refused_form_leads_back_to_its_page() {
        for (path, expected) in [
            ("/shares/new", "/shares/new"),
            ("/login", "/login"),
            ("/account/password", "/account"),
            ("/team/7/disable", "/team"),
            ("/shares/12/revoke", "/shares/12"),
            ("/s/abc/code/new", "/s/abc"),
            ("/invite/tok", "/invite/tok"),
        ] {
            assert_eq!(back_link(&Method::POST, path, true), expected, "{path}");
        }
    }

    #[test]
    fn without_a_form_a_sender_goes_to_the_dashboard_and_a_recipient_to_the_link() {
        assert_eq!(back_link(&Method::GET, "/shares/999", true), "/shares");
        assert_eq!(back_link(&Method::GET, "/nowhere", false), "/");
        assert_eq!(back_link(&Method::GET, "/s/abc/file", false), "/s/abc");
        assert_eq!(back_link(&Method::GET, "/s/abc", false), "/", "the link itself failed: no loop back to it");
    }

    #[test]
    fn the_link_never_leaves_this_origin() {
        for path in ["//evil.example/x", "/\\evil.example", "/s//evil.example/code", "/\t/evil.example"] {
            for method in [Method::GET, Method::POST] {
                for signed_in in [true, false] {
                    let link = back_link(&method, path, signed_in);
                    assert!(
                        link.starts_with('/') && !link.starts_with("//") && !link.contains('\\'),
                        "{path:?}: {link}"
                    );
                }
            }
        }
    }
}
