//! A refused form's problem, tied to the field it is about, so the page marks that field
//! (`aria-invalid`) and points it at the message (`aria-describedby`).

/// What is wrong with a form, if anything, and where.
#[derive(Clone, Copy, Debug, Default)]
pub struct FieldError {
    /// The field's `name`; `None` with a message: the form as a whole (a failed sign-in, which must
    /// not say whether the address or the password was wrong).
    field: Option<&'static str>,
    message: Option<&'static str>,
}

impl FieldError {
    /// Nothing wrong.
    pub const NONE: Self = Self { field: None, message: None };

    pub fn on(field: &'static str, message: &'static str) -> Self {
        Self { field: Some(field), message: Some(message) }
    }

    pub fn whole_form(message: &'static str) -> Self {
        Self { field: None, message: Some(message) }
    }

    pub fn message(&self) -> Option<&'static str> {
        self.message
    }

    /// The field `name` is in error (it is the one, or the whole form is).
    pub fn marks(&self, name: &str) -> bool {
        self.message.is_some() && self.field.is_none_or(|field| field == name)
    }
}

#[cfg(test)]
mod tests {
    use super::FieldError;

    #[test]
    fn a_problem_marks_its_field_and_a_whole_form_problem_every_field() {
        assert!(!FieldError::NONE.marks("email"));
        let name = FieldError::on("name", "bad name");
        assert!(name.marks("name") && !name.marks("email"));
        let form = FieldError::whole_form("wrong");
        assert!(form.marks("email") && form.marks("password"));
    }
}
