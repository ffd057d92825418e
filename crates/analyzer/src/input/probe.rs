//! A serde `Deserializer` that makes up its input: driven by a view's `Deserialize`, it gives
//! every field the view asks for a value that is not its default, and writes down the JSON it
//! gave. That JSON names every field of the view, so the skimming reader, fed the same text,
//! must read every field to agree with serde: a field added to a view and forgotten in
//! `skim.rs` reads as its default there, and the two disagree.
//!
//! Where a view reads "any" value (its lenient fields, its own visitors), the shape given
//! follows what the visitor says it expects: a map for "map" and "struct" and "step", a list for
//! "list" and "sequence", else a number written as a string. `pass` varies the words given
//! where the analyzer looks for particular ones (a condition's `type`, a step's kind).

use std::cell::RefCell;
use std::collections::BTreeSet;

use serde::de::{self, DeserializeSeed, IntoDeserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use crate::input::view::{KEPT_ANNOTATIONS, KEPT_LABELS};

/// The token serde_json's `RawValue` asks a deserializer for.
const RAW_VALUE: &str = "$serde_json::private::RawValue";

/// What one run shares: its pass, a counter for distinct values, the fields met.
#[derive(Debug, Default)]
pub(crate) struct Run {
    pass: usize,
    counter: RefCell<u64>,
    /// (struct, field) of every struct field given a value.
    pub fields: RefCell<BTreeSet<(String, String)>>,
}

impl Run {
    pub fn new(pass: usize) -> Self {
        Run {
            pass,
            ..Run::default()
        }
    }

    fn next(&self) -> u64 {
        let mut c = self.counter.borrow_mut();
        *c += 1;
        *c
    }

    /// A string for a member named `field`.
    fn word(&self, field: &str) -> String {
        let n = self.next();
        let pick = |words: &[&str]| words[self.pass % words.len()].to_owned();
        match field {
            "type" => pick(&["Progressing", "Ready", "Available"]),
            "reason" => pick(&["CanaryPauseStep", "NewReplicaSetAvailable"]),
            "status" => "True".to_owned(),
            "subresource" => pick(&["status", ""]),
            "kind" => pick(&["Rollout", "ReplicaSet", "Application"]),
            "phase" => pick(&["Paused", "Healthy", "Progressing"]),
            f if f == "time"
                || f.ends_with("Timestamp")
                || f.ends_with("Time")
                || f.ends_with("At") =>
            {
                format!("2026-01-02T03:{:02}:{:02}Z", (n / 60) % 60, n % 60)
            }
            _ => format!("v{n}"),
        }
    }

    /// The keys of a map whose keys the view does not name.
    fn map_keys(&self) -> Vec<&'static str> {
        let mut keys: Vec<&str> = KEPT_LABELS
            .iter()
            .chain(KEPT_ANNOTATIONS)
            .copied()
            .collect();
        keys.push(["setWeight", "pause", "analysis"][self.pass % 3]);
        keys.push("k");
        keys
    }
}

/// The error of a made-up input: a visitor refused what it was given.
#[derive(Debug)]
pub(crate) struct Refused(String);

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Refused {}

impl de::Error for Refused {
    fn custom<T: std::fmt::Display>(msg: T) -> Self {
        Refused(msg.to_string())
    }
}

/// Gives the value of the member `field` (`""` at the top or in a list) and writes it to `out`.
pub(crate) struct Probe<'a> {
    pub run: &'a Run,
    pub field: &'a str,
    pub out: &'a mut Value,
}

impl<'a> Probe<'a> {
    fn child<'b>(&'b self, field: &'b str, out: &'b mut Value) -> Probe<'b> {
        Probe {
            run: self.run,
            field,
            out,
        }
    }

    fn number_text(self) -> String {
        let n = self.run.next();
        let text = n.to_string();
        *self.out = Value::String(text.clone());
        text
    }
}

/// The keys of a struct or a map, each given a value in turn.
struct Members<'a, 'p> {
    probe: &'p mut Probe<'a>,
    strukt: Option<&'static str>,
    keys: Vec<&'static str>,
    at: usize,
    object: Map<String, Value>,
}

impl<'de> MapAccess<'de> for Members<'_, '_> {
    type Error = Refused;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Refused> {
        let Some(key) = self.keys.get(self.at) else {
            return Ok(None);
        };
        seed.deserialize(key.into_deserializer()).map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Refused> {
        let key = self.keys[self.at];
        self.at += 1;
        if let Some(s) = self.strukt {
            self.probe
                .run
                .fields
                .borrow_mut()
                .insert((s.to_owned(), key.to_owned()));
        }
        let mut value = Value::Null;
        let got = seed.deserialize(self.probe.child(key, &mut value))?;
        self.object.insert(key.to_owned(), value);
        Ok(got)
    }
}

/// One element, given a value.
struct Items<'a, 'p> {
    probe: &'p mut Probe<'a>,
    left: usize,
    items: Vec<Value>,
}

impl<'de> SeqAccess<'de> for Items<'_, '_> {
    type Error = Refused;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Refused> {
        if self.left == 0 {
            return Ok(None);
        }
        self.left -= 1;
        let mut value = Value::Null;
        let field = self.probe.field;
        let got = seed.deserialize(self.probe.child(field, &mut value))?;
        self.items.push(value);
        Ok(Some(got))
    }
}

impl<'a> Probe<'a> {
    fn members<'de, V: Visitor<'de>>(
        mut self,
        strukt: Option<&'static str>,
        keys: Vec<&'static str>,
        visitor: V,
    ) -> Result<V::Value, Refused> {
        let mut members = Members {
            probe: &mut self,
            strukt,
            keys,
            at: 0,
            object: Map::new(),
        };
        let got = visitor.visit_map(&mut members)?;
        let object = std::mem::take(&mut members.object);
        *self.out = Value::Object(object);
        Ok(got)
    }

    fn items<'de, V: Visitor<'de>>(mut self, visitor: V) -> Result<V::Value, Refused> {
        let mut items = Items {
            probe: &mut self,
            left: 1,
            items: Vec::new(),
        };
        let got = visitor.visit_seq(&mut items)?;
        let items = std::mem::take(&mut items.items);
        *self.out = Value::Array(items);
        Ok(got)
    }
}

macro_rules! integers {
    ($($method:ident => $visit:ident as $t:ty),*) => {
        $(fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Refused> {
            let n = self.run.next() % 100 + 1;
            *self.out = Value::from(n);
            visitor.$visit(n as $t)
        })*
    };
}

impl<'de> de::Deserializer<'de> for Probe<'_> {
    type Error = Refused;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Refused> {
        let expects = format!("{}", &visitor as &dyn de::Expected);
        if ["map", "struct", "step"]
            .iter()
            .any(|w| expects.contains(w))
        {
            let keys = self.run.map_keys();
            self.members(None, keys, visitor)
        } else if ["list", "sequence"].iter().any(|w| expects.contains(w)) {
            self.items(visitor)
        } else {
            let text = self.number_text();
            visitor.visit_string(text)
        }
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Refused> {
        let b = self.run.pass % 2 == 0;
        *self.out = Value::Bool(b);
        visitor.visit_bool(b)
    }

    integers!(
        deserialize_i8 => visit_i8 as i8, deserialize_i16 => visit_i16 as i16,
        deserialize_i32 => visit_i32 as i32, deserialize_i64 => visit_i64 as i64,
        deserialize_u8 => visit_u8 as u8, deserialize_u16 => visit_u16 as u16,
        deserialize_u32 => visit_u32 as u32, deserialize_u64 => visit_u64 as u64
    );

    fn deserialize_f32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Refused> {
        self.deserialize_f64(visitor)
    }

    fn deserialize_f64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Refused> {
        let n = self.run.next() as f64 + 0.5;
        *self.out = Value::from(n);
        visitor.visit_f64(n)
    }

    fn deserialize_char<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Refused> {
        *self.out = Value::String("c".into());
        visitor.visit_char('c')
    }

    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Refused> {
        let word = self.run.word(self.field);
        *self.out = Value::String(word.clone());
        visitor.visit_string(word)
    }

    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Refused> {
        self.deserialize_str(visitor)
    }

    fn deserialize_bytes<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Refused> {
        self.deserialize_str(visitor)
    }

    fn deserialize_byte_buf<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Refused> {
        self.deserialize_str(visitor)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Refused> {
        visitor.visit_some(self)
    }

    fn deserialize_unit<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Refused> {
        *self.out = Value::Null;
        visitor.visit_unit()
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        visitor: V,
    ) -> Result<V::Value, Refused> {
        self.deserialize_unit(visitor)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Refused> {
        if name != RAW_VALUE {
            return visitor.visit_newtype_struct(self);
        }
        // A pod template kept unparsed: one with labels, as the API server writes it.
        let n = self.run.next();
        let raw = format!(
            r#"{{"metadata":{{"labels":{{"app":"web","rollouts-pod-template-hash":"h{n}"}}}},"spec":{{"containers":[{{"name":"app","image":"registry.example/web:{n}"}}]}}}}"#
        );
        *self.out = serde_json::from_str(&raw).map_err(|e| Refused(e.to_string()))?;
        visitor.visit_map(RawValueAccess { raw: Some(raw) })
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Refused> {
        self.items(visitor)
    }

    fn deserialize_tuple<V: Visitor<'de>>(self, _: usize, visitor: V) -> Result<V::Value, Refused> {
        self.items(visitor)
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: usize,
        visitor: V,
    ) -> Result<V::Value, Refused> {
        self.items(visitor)
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Refused> {
        let keys = self.run.map_keys();
        self.members(None, keys, visitor)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Refused> {
        self.members(Some(name), fields.to_vec(), visitor)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: &'static [&'static str],
        _: V,
    ) -> Result<V::Value, Refused> {
        Err(Refused("no view reads an enum from JSON".into()))
    }

    fn deserialize_identifier<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Refused> {
        self.deserialize_str(visitor)
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Refused> {
        *self.out = Value::String("ignored".into());
        visitor.visit_unit()
    }
}

/// The one entry serde_json's `RawValue` reads: its token, then the text.
struct RawValueAccess {
    raw: Option<String>,
}

impl<'de> MapAccess<'de> for RawValueAccess {
    type Error = Refused;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Refused> {
        if self.raw.is_none() {
            return Ok(None);
        }
        seed.deserialize(RAW_VALUE.into_deserializer()).map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Refused> {
        let raw = self.raw.take().unwrap_or_default();
        seed.deserialize(raw.into_deserializer())
    }
}

/// The JSON a `T` made of, in pass `pass`, and the struct fields it named.
pub(crate) fn made_up<T: de::DeserializeOwned>(
    pass: usize,
) -> Result<(Value, BTreeSet<(String, String)>), Refused> {
    let run = Run::new(pass);
    let mut out = Value::Null;
    T::deserialize(Probe {
        run: &run,
        field: "",
        out: &mut out,
    })?;
    Ok((out, run.fields.take()))
}
