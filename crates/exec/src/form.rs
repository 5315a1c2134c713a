//! An MCP server's form (an elicitation's `requestedSchema`) as questions asked one field at
//! a time: what each field takes, how it is shown, and the typed answer checked against it.
//!
//! The schema is the flat object MCP allows: string (with length limits and a format),
//! number, integer and boolean properties, single choices (`enum`, `enum` + `enumNames`,
//! `oneOf` of `const`/`title`) and multiple choices (`array` of such items). It comes from a
//! server, so everything about it is checked and nothing in it is trusted to be well formed.

use serde_json::{Map, Value};

/// One field of a form, in the order it is asked.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Field {
    /// The property's name: the key of the answer.
    pub(crate) name: String,
    /// Its title, when the schema gives one.
    pub(crate) title: Option<String>,
    /// Its description.
    pub(crate) description: Option<String>,
    /// Whether the form needs it.
    pub(crate) required: bool,
    /// The value an empty answer stands for.
    pub(crate) default: Option<Value>,
    /// What it takes.
    pub(crate) kind: Kind,
}

/// What a field takes.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Kind {
    /// Text, within length limits (in characters), maybe of a format.
    Text {
        min_length: Option<u64>,
        max_length: Option<u64>,
        format: Option<Format>,
    },
    /// A number (a whole one when `integer`), within bounds.
    Number {
        integer: bool,
        minimum: Option<f64>,
        maximum: Option<f64>,
    },
    /// Yes or no.
    Boolean,
    /// One of the options.
    Choice(Vec<Choice>),
    /// Some of the options, between the limits.
    Choices {
        options: Vec<Choice>,
        min_items: Option<u64>,
        max_items: Option<u64>,
    },
    /// A kind of property MCP forms do not have; it cannot be answered here.
    Unsupported,
}

/// A string format MCP forms allow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    Email,
    Uri,
    Date,
    DateTime,
}

/// An option of a choice: the value answered, and the label shown for it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Choice {
    pub(crate) value: Value,
    pub(crate) label: Option<String>,
}

/// The fields of `schema`, or why it is no form that can be filled in here.
pub(crate) fn fields(schema: &Value) -> Result<Vec<Field>, String> {
    let properties = schema
        .get("properties")
        .and_then(Value::as_object)
        .ok_or("the form has no fields (`properties`)")?;
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    Ok(properties
        .iter()
        .map(|(name, property)| field(name, property, required.contains(&name.as_str())))
        .collect())
}

fn field(name: &str, property: &Value, required: bool) -> Field {
    let text = |key: &str| {
        property
            .get(key)
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    Field {
        name: name.to_string(),
        title: text("title"),
        description: text("description"),
        required,
        default: property.get("default").cloned(),
        kind: kind(property),
    }
}

fn kind(property: &Value) -> Kind {
    let number = |key: &str| property.get(key).and_then(Value::as_f64);
    let count = |key: &str| property.get(key).and_then(Value::as_u64);
    if let Some(options) = options(property) {
        return Kind::Choice(options);
    }
    match property.get("type").and_then(Value::as_str) {
        Some("string") => Kind::Text {
            min_length: count("minLength"),
            max_length: count("maxLength"),
            format: match property.get("format").and_then(Value::as_str) {
                Some("email") => Some(Format::Email),
                Some("uri") => Some(Format::Uri),
                Some("date") => Some(Format::Date),
                Some("date-time") => Some(Format::DateTime),
                _ => None,
            },
        },
        Some(kind @ ("number" | "integer")) => Kind::Number {
            integer: kind == "integer",
            minimum: number("minimum"),
            maximum: number("maximum"),
        },
        Some("boolean") => Kind::Boolean,
        Some("array") => match property.get("items").and_then(options) {
            Some(options) => Kind::Choices {
                options,
                min_items: count("minItems"),
                max_items: count("maxItems"),
            },
            None => Kind::Unsupported,
        },
        _ => Kind::Unsupported,
    }
}

/// The options of a choice: `enum` (labelled by `enumNames` when given), or `oneOf` /
/// `anyOf` of `{const, title}`.
fn options(schema: &Value) -> Option<Vec<Choice>> {
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        let names = schema.get("enumNames").and_then(Value::as_array);
        return Some(
            values
                .iter()
                .enumerate()
                .map(|(n, value)| Choice {
                    value: value.clone(),
                    label: names
                        .and_then(|names| names.get(n))
                        .and_then(Value::as_str)
                        .map(str::to_string),
                })
                .collect(),
        );
    }
    let listed = schema
        .get("oneOf")
        .or_else(|| schema.get("anyOf"))
        .and_then(Value::as_array)?;
    listed
        .iter()
        .map(|option| {
            Some(Choice {
                value: option.get("const")?.clone(),
                label: option
                    .get("title")
                    .and_then(Value::as_str)
                    .map(str::to_string),
            })
        })
        .collect()
}

impl Field {
    /// What to type, shown before the answer: the kind, its limits, and what an empty
    /// answer does.
    pub(crate) fn hint(&self) -> String {
        let empty = match (&self.default, self.required) {
            (Some(default), _) => format!("empty for {}", shown(default)),
            (None, true) => "required".to_string(),
            (None, false) => "empty to leave it out".to_string(),
        };
        format!("{}; {empty}", self.takes())
    }

    /// What the field takes, with its limits.
    fn takes(&self) -> String {
        match &self.kind {
            Kind::Text {
                min_length,
                max_length,
                format,
            } => {
                let mut hint = match format {
                    None => "text".to_string(),
                    Some(Format::Email) => "an email address".to_string(),
                    Some(Format::Uri) => "a URI".to_string(),
                    Some(Format::Date) => "a date, YYYY-MM-DD".to_string(),
                    Some(Format::DateTime) => {
                        "a date and time, YYYY-MM-DDTHH:MM:SSZ or with an offset".to_string()
                    }
                };
                hint.push_str(&bounds(
                    min_length.map(|n| n as f64),
                    max_length.map(|n| n as f64),
                    " characters",
                ));
                hint
            }
            Kind::Number {
                integer,
                minimum,
                maximum,
            } => {
                let what = if *integer {
                    "a whole number"
                } else {
                    "a number"
                };
                format!("{what}{}", bounds(*minimum, *maximum, ""))
            }
            Kind::Boolean => "y or n".to_string(),
            Kind::Choice(_) => "its number or value".to_string(),
            Kind::Choices {
                min_items,
                max_items,
                ..
            } => format!(
                "numbers or values, separated by commas{}",
                bounds(
                    min_items.map(|n| n as f64),
                    max_items.map(|n| n as f64),
                    " of them"
                )
            ),
            Kind::Unsupported => "cannot be answered here".to_string(),
        }
    }

    /// The options to list before the question, numbered from 1.
    pub(crate) fn options(&self) -> &[Choice] {
        match &self.kind {
            Kind::Choice(options) | Kind::Choices { options, .. } => options,
            Kind::Text { .. } | Kind::Number { .. } | Kind::Boolean | Kind::Unsupported => &[],
        }
    }

    /// The value of a typed answer: `Ok(None)` leaves the field out (an empty answer to
    /// an optional field without a default); `Err` says what is wrong, to ask again.
    pub(crate) fn answer(&self, line: &str) -> Result<Option<Value>, String> {
        let line = line.trim();
        if line.is_empty() {
            return match (&self.default, self.required) {
                (Some(default), _) => Ok(Some(default.clone())),
                (None, true) => Err("This field is required.".to_string()),
                (None, false) => Ok(None),
            };
        }
        self.parse(line).map(Some)
    }

    fn parse(&self, line: &str) -> Result<Value, String> {
        match &self.kind {
            Kind::Text {
                min_length,
                max_length,
                format,
            } => {
                let length = line.chars().count() as u64;
                if min_length.is_some_and(|min| length < min) {
                    return Err(format!("Too short: {}.", self.takes()));
                }
                if max_length.is_some_and(|max| length > max) {
                    return Err(format!("Too long: {}.", self.takes()));
                }
                if let Some(format) = format
                    && !format.admits(line)
                {
                    return Err(format!("Expected {}.", self.takes()));
                }
                Ok(Value::String(line.to_string()))
            }
            Kind::Number {
                integer,
                minimum,
                maximum,
            } => {
                let (value, as_f64) = match line.parse::<i64>() {
                    Ok(n) => (Value::from(n), n as f64),
                    Err(_) if *integer => return Err("That is not a whole number.".into()),
                    Err(_) => match line.parse::<f64>().ok().filter(|n| n.is_finite()) {
                        Some(n) => (Value::from(n), n),
                        None => return Err("That is not a number.".into()),
                    },
                };
                if minimum.is_some_and(|min| as_f64 < min)
                    || maximum.is_some_and(|max| as_f64 > max)
                {
                    return Err(format!("Out of range: {}.", self.takes()));
                }
                Ok(value)
            }
            Kind::Boolean => match line.to_ascii_lowercase().as_str() {
                "y" | "yes" | "true" => Ok(Value::Bool(true)),
                "n" | "no" | "false" => Ok(Value::Bool(false)),
                _ => Err("Answer y or n.".into()),
            },
            Kind::Choice(options) => pick(options, line).map(|choice| choice.value.clone()),
            Kind::Choices {
                options,
                min_items,
                max_items,
            } => {
                let mut picked: Vec<Value> = Vec::new();
                for part in line.split(',').map(str::trim).filter(|p| !p.is_empty()) {
                    let value = pick(options, part)?.value.clone();
                    if !picked.contains(&value) {
                        picked.push(value);
                    }
                }
                let count = picked.len() as u64;
                if min_items.is_some_and(|min| count < min)
                    || max_items.is_some_and(|max| count > max)
                {
                    return Err(format!(
                        "Pick {}.",
                        bounds(min_items.map(|n| n as f64), max_items.map(|n| n as f64), "")
                            .trim_start_matches(", ")
                    ));
                }
                Ok(Value::Array(picked))
            }
            Kind::Unsupported => Err("This field cannot be answered here.".into()),
        }
    }
}

/// The option `typed` names: by its number in the list, its value, or its label (any
/// case).
fn pick<'a>(options: &'a [Choice], typed: &str) -> Result<&'a Choice, String> {
    if let Some(choice) = typed
        .parse::<usize>()
        .ok()
        .and_then(|n| n.checked_sub(1))
        .and_then(|n| options.get(n))
    {
        return Ok(choice);
    }
    options
        .iter()
        .find(|choice| shown(&choice.value) == typed)
        .or_else(|| {
            options.iter().find(|choice| {
                choice
                    .label
                    .as_deref()
                    .is_some_and(|label| label.eq_ignore_ascii_case(typed))
            })
        })
        .ok_or_else(|| {
            format!(
                "`{typed}` is none of the options: type its number (1 to {}) or its value.",
                options.len()
            )
        })
}

/// `, from MIN to MAX UNIT`, `, at least MIN UNIT`, `, at most MAX UNIT`, or nothing.
fn bounds(min: Option<f64>, max: Option<f64>, unit: &str) -> String {
    match (min, max) {
        (Some(min), Some(max)) => format!(", from {min} to {max}{unit}"),
        (Some(min), None) => format!(", at least {min}{unit}"),
        (None, Some(max)) => format!(", at most {max}{unit}"),
        (None, None) => String::new(),
    }
}

/// A value as the user reads and types it: a string without quotes, a list joined by
/// commas.
pub(crate) fn shown(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        Value::Array(values) => values.iter().map(shown).collect::<Vec<_>>().join(", "),
        other => other.to_string(),
    }
}

/// The answers as the form's content.
pub(crate) fn content(answers: Vec<(String, Value)>) -> Value {
    Value::Object(answers.into_iter().collect::<Map<String, Value>>())
}

impl Format {
    /// Whether `text` looks like this format: enough to catch a slip of the keyboard; the
    /// server checks its own input.
    fn admits(self, text: &str) -> bool {
        match self {
            Self::Email => text.split_once('@').is_some_and(|(local, domain)| {
                !local.is_empty()
                    && domain.contains('.')
                    && !domain.starts_with('.')
                    && !domain.ends_with('.')
                    && !text.chars().any(char::is_whitespace)
                    && !domain.contains('@')
            }),
            Self::Uri => text.split_once(':').is_some_and(|(scheme, rest)| {
                scheme
                    .chars()
                    .next()
                    .is_some_and(|c| c.is_ascii_alphabetic())
                    && scheme
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
                    && !rest.is_empty()
                    && !text.chars().any(char::is_whitespace)
            }),
            Self::Date => is_date(text),
            Self::DateTime => text
                .split_once(['T', 't'])
                .is_some_and(|(date, time)| is_date(date) && is_time(time)),
        }
    }
}

/// `YYYY-MM-DD` with a month and a day that can exist.
fn is_date(text: &str) -> bool {
    let parts: Vec<&str> = text.split('-').collect();
    let [year, month, day] = parts[..] else {
        return false;
    };
    let digits = |part: &str, n: usize| part.len() == n && part.chars().all(|c| c.is_ascii_digit());
    if !(digits(year, 4) && digits(month, 2) && digits(day, 2)) {
        return false;
    }
    let (month, day): (u32, u32) = (month.parse().unwrap_or(0), day.parse().unwrap_or(0));
    (1..=12).contains(&month) && (1..=31).contains(&day)
}

/// `HH:MM:SS`, maybe with a fraction, then `Z` or an offset `±HH:MM`.
fn is_time(text: &str) -> bool {
    let (clock, zone) = if let Some(clock) = text.strip_suffix(['Z', 'z']) {
        (clock, None)
    } else if let Some(at) = text.rfind(['+', '-']) {
        (&text[..at], Some(&text[at + 1..]))
    } else {
        return false;
    };
    let clock = clock.split_once('.').map_or(clock, |(whole, fraction)| {
        if !fraction.is_empty() && fraction.chars().all(|c| c.is_ascii_digit()) {
            whole
        } else {
            ""
        }
    });
    let hhmm = |part: &str, parts: usize| {
        let pieces: Vec<&str> = part.split(':').collect();
        pieces.len() == parts
            && pieces
                .iter()
                .all(|p| p.len() == 2 && p.chars().all(|c| c.is_ascii_digit()))
    };
    hhmm(clock, 3) && zone.is_none_or(|zone| hhmm(zone, 2))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn one(property: Value, required: bool) -> Field {
        let schema = json!({
            "type": "object",
            "properties": {"f": property},
            "required": if required { json!(["f"]) } else { json!([]) },
        });
        fields(&schema).unwrap().remove(0)
    }

    #[test]
    fn each_kind_of_field_is_read_from_the_schema() {
        let schema = json!({
            "type": "object",
            "properties": {
                "a": {"type": "string", "minLength": 2, "format": "email", "title": "A"},
                "b": {"type": "integer", "minimum": 1, "maximum": 100, "default": 42},
                "c": {"type": "boolean", "description": "agree?"},
                "d": {"type": "string", "enum": ["p1", "p2"], "enumNames": ["Cats", "Dogs"]},
                "e": {"type": "string", "oneOf": [{"const": "h1", "title": "Superman"}]},
                "f": {"type": "array", "maxItems": 2, "items": {"anyOf": [{"const": "x", "title": "X"}]}},
                "g": {"type": "object"},
            },
            "required": ["a", "zzz"],
        });
        let fields = fields(&schema).unwrap();
        let names: Vec<&str> = fields.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["a", "b", "c", "d", "e", "f", "g"]);
        assert!(fields[0].required && !fields[1].required);
        assert_eq!(fields[0].title.as_deref(), Some("A"));
        assert_eq!(
            fields[0].kind,
            Kind::Text {
                min_length: Some(2),
                max_length: None,
                format: Some(Format::Email)
            }
        );
        assert_eq!(fields[1].default, Some(json!(42)));
        assert_eq!(fields[2].kind, Kind::Boolean);
        assert_eq!(
            fields[3].options()[1],
            Choice {
                value: json!("p2"),
                label: Some("Dogs".into())
            }
        );
        assert_eq!(fields[4].options()[0].value, json!("h1"));
        assert!(matches!(
            fields[5].kind,
            Kind::Choices {
                max_items: Some(2),
                ..
            }
        ));
        assert_eq!(fields[6].kind, Kind::Unsupported);
    }

    #[test]
    fn a_schema_without_properties_is_no_form() {
        assert!(fields(&json!({"type": "object"})).is_err());
        assert!(fields(&json!("nonsense")).is_err());
    }

    #[test]
    fn empty_answers_take_the_default_leave_out_or_are_refused_when_required() {
        let with_default = one(json!({"type": "integer", "default": 42}), false);
        assert_eq!(with_default.answer("  "), Ok(Some(json!(42))));
        let optional = one(json!({"type": "string"}), false);
        assert_eq!(optional.answer(""), Ok(None));
        let required = one(json!({"type": "string"}), true);
        assert_eq!(
            required.answer(""),
            Err("This field is required.".to_string())
        );
        assert!(
            required.hint().ends_with("; required"),
            "{}",
            required.hint()
        );
        assert!(with_default.hint().ends_with("; empty for 42"));
    }

    #[test]
    fn numbers_are_checked_for_type_and_range() {
        let integer = one(
            json!({"type": "integer", "minimum": 1, "maximum": 100}),
            true,
        );
        assert_eq!(integer.answer("7"), Ok(Some(json!(7))));
        assert_eq!(
            integer.answer("7.5"),
            Err("That is not a whole number.".into())
        );
        assert_eq!(
            integer.answer("150"),
            Err("Out of range: a whole number, from 1 to 100.".into())
        );
        let number = one(json!({"type": "number", "maximum": 10}), true);
        assert_eq!(number.answer("2.5"), Ok(Some(json!(2.5))));
        assert_eq!(number.answer("3"), Ok(Some(json!(3))));
        assert_eq!(number.answer("NaN"), Err("That is not a number.".into()));
        assert_eq!(number.answer("inf"), Err("That is not a number.".into()));
        assert!(number.answer("11").is_err());
    }

    #[test]
    fn text_is_checked_for_length_and_format() {
        let short = one(
            json!({"type": "string", "minLength": 3, "maxLength": 4}),
            true,
        );
        assert_eq!(
            short.answer("ab"),
            Err("Too short: text, from 3 to 4 characters.".into())
        );
        assert!(short.answer("abcde").is_err());
        assert_eq!(short.answer("äöü"), Ok(Some(json!("äöü"))));
        let email = one(json!({"type": "string", "format": "email"}), true);
        assert!(email.answer("ada@example.org").is_ok());
        for bad in ["ada", "@example.org", "ada@example", "a da@example.org"] {
            assert!(email.answer(bad).is_err(), "{bad}");
        }
        let uri = one(json!({"type": "string", "format": "uri"}), true);
        assert!(uri.answer("https://example.org").is_ok());
        assert!(uri.answer("example.org").is_err());
        let date = one(json!({"type": "string", "format": "date"}), true);
        assert!(date.answer("1815-12-10").is_ok());
        for bad in ["1815-13-10", "10.12.1815", "1815-12-1"] {
            assert!(date.answer(bad).is_err(), "{bad}");
        }
        let when = one(json!({"type": "string", "format": "date-time"}), true);
        for good in ["2024-05-01T12:00:00Z", "2024-05-01T12:00:00.5+02:00"] {
            assert!(when.answer(good).is_ok(), "{good}");
        }
        for bad in ["2024-05-01", "2024-05-01T12:00", "2024-05-01T12:00:00"] {
            assert!(when.answer(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn booleans_take_yes_and_no() {
        let check = one(json!({"type": "boolean"}), true);
        assert_eq!(check.answer("Y"), Ok(Some(json!(true))));
        assert_eq!(check.answer("false"), Ok(Some(json!(false))));
        assert_eq!(check.answer("maybe"), Err("Answer y or n.".into()));
    }

    #[test]
    fn a_choice_is_picked_by_number_value_or_label_and_nothing_else() {
        let pet = one(
            json!({"type": "string", "enum": ["pet-1", "pet-2"], "enumNames": ["Cats", "Dogs"]}),
            true,
        );
        assert_eq!(pet.answer("2"), Ok(Some(json!("pet-2"))));
        assert_eq!(pet.answer("pet-1"), Ok(Some(json!("pet-1"))));
        assert_eq!(pet.answer("dogs"), Ok(Some(json!("pet-2"))));
        assert_eq!(
            pet.answer("3"),
            Err("`3` is none of the options: type its number (1 to 2) or its value.".into())
        );
        assert!(pet.answer("Birds").is_err());
    }

    #[test]
    fn several_choices_are_picked_within_their_limits() {
        let fish = one(
            json!({"type": "array", "minItems": 1, "maxItems": 2, "default": ["f1"],
                   "items": {"anyOf": [{"const": "f1", "title": "Tuna"},
                                       {"const": "f2", "title": "Salmon"},
                                       {"const": "f3", "title": "Trout"}]}}),
            false,
        );
        assert_eq!(fish.answer("3, salmon"), Ok(Some(json!(["f3", "f2"]))));
        assert_eq!(fish.answer("1,1"), Ok(Some(json!(["f1"]))));
        assert_eq!(fish.answer(""), Ok(Some(json!(["f1"]))));
        assert_eq!(fish.answer("1,2,3"), Err("Pick from 1 to 2.".into()));
        assert!(fish.answer("1, carp").is_err());
        assert!(fish.hint().ends_with("; empty for f1"), "{}", fish.hint());
    }

    #[test]
    fn an_unsupported_field_cannot_be_answered() {
        let field = one(json!({"type": "object"}), false);
        assert!(field.answer("{}").is_err());
        assert_eq!(field.answer(""), Ok(None));
    }
}
