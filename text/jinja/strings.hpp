#pragma once
// Python str operations shared by filters and methods. Case mapping covers ASCII letters
// only; other code points pass through unchanged.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace troupe::jinja::strings {

std::string upper(const std::string& s);
std::string lower(const std::string& s);
std::string capitalize(const std::string& s);   // str.capitalize: first upper, rest lower
std::string title(const std::string& s);        // str.title
std::string jinja_title(const std::string& s);  // the title filter: words split at - space ( { [ <
// str.replace; count < 0 replaces all.
std::string replace(const std::string& s, const std::string& old, const std::string& with, std::int64_t count);
// str.split: on runs of whitespace when `sep` is empty, else on `sep`; maxsplit < 0: no limit.
std::vector<std::string> split(const std::string& s, const std::optional<std::string>& sep, std::int64_t maxsplit);
// markupsafe.escape: & < > " '
std::string html_escape(const std::string& s);

}  // namespace troupe::jinja::strings
