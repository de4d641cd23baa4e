//! The AWS CLI's shared files, read as it reads them: `~/.aws/credentials` (what `aws configure`
//! writes; `AWS_SHARED_CREDENTIALS_FILE` moves it) and `~/.aws/config` (`AWS_CONFIG_FILE`), the
//! profile named by `AWS_PROFILE`, else `default`. The environment's own variables win over
//! both, and a key in the credentials file over the same key in the config file.
//!
//! Only static keys, the region and the endpoint are read. A profile that gets its keys some
//! other way (a role to assume, SSO, a `credential_process`) is named in the error, with what
//! to do, rather than tried.

use std::collections::HashMap;
use std::path::PathBuf;

/// What one profile of the shared files says.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Profile {
    pub access_key_id: Option<String>,
    pub secret_access_key: Option<String>,
    pub session_token: Option<String>,
    pub region: Option<String>,
    pub endpoint_url: Option<String>,
}

/// Ways to get keys the CLI knows and dupfind does not follow.
const OTHER_SOURCES: [&str; 5] = [
    "role_arn",
    "sso_session",
    "sso_start_url",
    "credential_process",
    "web_identity_token_file",
];

/// The profile the environment selects, from the files where they exist. Err when `AWS_PROFILE`
/// names a profile neither file has, or one whose keys come from a source dupfind cannot read.
pub(super) fn profile() -> Result<Profile, String> {
    let named = std::env::var("AWS_PROFILE")
        .or_else(|_| std::env::var("AWS_DEFAULT_PROFILE"))
        .ok()
        .filter(|p| !p.is_empty());
    let name = named.as_deref().unwrap_or("default");
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let file = |var: &str, default: &str| {
        std::env::var_os(var)
            .map(PathBuf::from)
            .or_else(|| home.as_ref().map(|h| h.join(".aws").join(default)))
    };
    let read = |path: Option<PathBuf>| -> String {
        path.and_then(|p| std::fs::read_to_string(p).ok())
            .unwrap_or_default()
    };
    let credentials = read(file("AWS_SHARED_CREDENTIALS_FILE", "credentials"));
    let config = read(file("AWS_CONFIG_FILE", "config"));
    resolve(name, named.is_some(), &credentials, &config)
}

/// [`profile`] on the files' contents: `explicit` when the name came from `AWS_PROFILE`.
fn resolve(name: &str, explicit: bool, credentials: &str, config: &str) -> Result<Profile, String> {
    let from_credentials = sections(credentials).remove(name);
    // The config file names a profile `[profile NAME]`, except `[default]`.
    let config_section = if name == "default" {
        "default".to_string()
    } else {
        format!("profile {name}")
    };
    let from_config = sections(config).remove(&config_section);
    if explicit && from_credentials.is_none() && from_config.is_none() {
        return Err(format!(
            "AWS_PROFILE names the profile {name}, which neither ~/.aws/credentials nor \
             ~/.aws/config has"
        ));
    }
    let (c, f) = (
        from_credentials.unwrap_or_default(),
        from_config.unwrap_or_default(),
    );
    let get = |key: &str| c.get(key).or_else(|| f.get(key)).cloned();
    let profile = Profile {
        access_key_id: get("aws_access_key_id"),
        secret_access_key: get("aws_secret_access_key"),
        session_token: get("aws_session_token"),
        region: f.get("region").cloned(),
        endpoint_url: f.get("endpoint_url").cloned(),
    };
    if explicit && profile.access_key_id.is_none() {
        if let Some(other) = OTHER_SOURCES
            .iter()
            .find(|k| c.contains_key(**k) || f.contains_key(**k))
        {
            return Err(format!(
                "the profile {name} gets its keys through {other}, which dupfind does not \
                 follow: export the keys it gives (`aws configure export-credentials --profile \
                 {name} --format env`) and run again"
            ));
        }
    }
    Ok(profile)
}

/// An INI file's sections: `[name]` then `key = value` lines; `#` and `;` start comments.
/// Indented lines (a nested `s3 =` block's settings) are left out: only a profile's own keys
/// are read.
fn sections(text: &str) -> HashMap<String, HashMap<String, String>> {
    let mut out: HashMap<String, HashMap<String, String>> = HashMap::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        if line.starts_with([' ', '\t']) {
            continue;
        }
        let line = line.trim();
        if line.is_empty() || line.starts_with(['#', ';']) {
            continue;
        }
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            let name = name.split_whitespace().collect::<Vec<_>>().join(" ");
            out.entry(name.clone()).or_default();
            current = Some(name);
        } else if let (Some(section), Some((key, value))) = (&current, line.split_once('=')) {
            if let Some(s) = out.get_mut(section) {
                s.insert(key.trim().to_ascii_lowercase(), value.trim().to_string());
            }
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const CREDENTIALS: &str = "\
# written by aws configure
[default]
aws_access_key_id = AKDEFAULT
aws_secret_access_key = secret/default

[work]
aws_access_key_id=AKWORK
aws_secret_access_key=secretwork
aws_session_token = tok
";
    const CONFIG: &str = "\
[default]
region = eu-west-1
[profile work]
region = us-east-2
endpoint_url = http://127.0.0.1:9000
s3 =
  addressing_style = path
[profile sso]
sso_session = corp
[profile  spaced ]
aws_access_key_id = AKCONFIG
aws_secret_access_key = fromconfig
";

    #[test]
    fn the_default_profile_and_its_region() {
        let p = resolve("default", false, CREDENTIALS, CONFIG).unwrap();
        assert_eq!(p.access_key_id.as_deref(), Some("AKDEFAULT"));
        assert_eq!(p.secret_access_key.as_deref(), Some("secret/default"));
        assert_eq!(p.session_token, None);
        assert_eq!(p.region.as_deref(), Some("eu-west-1"));
    }

    #[test]
    fn a_named_profile_from_both_files() {
        let p = resolve("work", true, CREDENTIALS, CONFIG).unwrap();
        assert_eq!(p.access_key_id.as_deref(), Some("AKWORK"));
        assert_eq!(p.session_token.as_deref(), Some("tok"));
        assert_eq!(p.region.as_deref(), Some("us-east-2"));
        assert_eq!(p.endpoint_url.as_deref(), Some("http://127.0.0.1:9000"));
        let spaced = resolve("spaced", true, "", CONFIG).unwrap();
        assert_eq!(spaced.secret_access_key.as_deref(), Some("fromconfig"));
    }

    #[test]
    fn a_missing_or_unreadable_profile_is_an_error_only_when_named() {
        assert_eq!(resolve("default", false, "", ""), Ok(Profile::default()));
        let e = resolve("nope", true, CREDENTIALS, CONFIG).unwrap_err();
        assert!(e.contains("profile nope"), "{e}");
        let e = resolve("sso", true, CREDENTIALS, CONFIG).unwrap_err();
        assert!(
            e.contains("sso_session") && e.contains("export-credentials"),
            "{e}"
        );
    }
}
