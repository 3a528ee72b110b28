// SPDX-License-Identifier: Apache-2.0
// redlock.1, made from the text `redlock --help` and each `redlock SUB
// --help` print (so that the page cannot drift from them): the synopsis
// and exit statuses from help.cpp, each subcommand's options from what its
// --help prints, laid out again as roff.
#include "args.hpp"
#include "commands.hpp"
#include "help.hpp"

#include <redlock/version.hpp>

#include <iostream>
#include <sstream>

namespace redlock::cli {

namespace {

// `text` as roff text: backslashes and minus signs escaped (an option's
// dashes must stay minus signs to be copied), and a leading . or ' made
// literal, so no line reads as a request.
std::string roff(std::string_view text) {
  std::string out;
  if (text.starts_with('.') || text.starts_with('\'')) out = "\\&";
  for (char c : text) {
    if (c == '\\')
      out += "\\e";
    else if (c == '-')
      out += "\\-";
    else
      out += c;
  }
  return out;
}

std::string trimmed(std::string_view s) {
  auto first = s.find_first_not_of(' ');
  if (first == std::string_view::npos) return {};
  return std::string(s.substr(first, s.find_last_not_of(' ') - first + 1));
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// `text` as a no-fill block, its lines as they are but for the indent they
// all share (the page indents the block itself).
void preformatted(std::ostream& os, const std::string& text) {
  auto lines = lines_of(text);
  std::size_t shared = std::string::npos;
  for (auto& line : lines) shared = std::min(shared, line.find_first_not_of(' '));
  os << ".nf\n";
  for (auto& line : lines) os << roff(line.substr(std::min(shared, line.size()))) << "\n";
  os << ".fi\n";
}

// What `redlock SUB --help` prints: parse() writes it to std::cout and
// throws help_shown.
std::string help_of(const subcommand& sub) {
  std::ostringstream captured;
  auto* saved = std::cout.rdbuf(captured.rdbuf());
  try {
    sub.run({"--help"});
  } catch (const help_shown&) {
  }
  std::cout.rdbuf(saved);
  return captured.str();
}

// A subcommand's --help as a section: its caption, then one tagged
// paragraph per option. Boost lays an option out as "  SPEC  TEXT", TEXT
// and its continuation lines starting at one column (the smallest indent
// of a continuation line); a SPEC too long for it has its TEXT below.
void options_section(std::ostream& os, const std::string& help) {
  auto lines = lines_of(help);
  if (lines.empty()) return;
  auto caption = lines.front();
  if (caption.ends_with(':')) caption.pop_back();
  os << ".SS " << roff(caption) << "\n";
  std::size_t column = std::string::npos;
  for (auto& l : lines)
    if (&l != &lines.front() && !l.starts_with("  -")) column = std::min(column, l.find_first_not_of(' '));
  bool open = false;  // an option's text is being written
  for (auto& l : lines) {
    if (&l == &lines.front()) continue;
    if (l.starts_with("  -")) {
      bool text_beside = column != std::string::npos && l.size() > column && l[column - 1] == ' ';
      os << ".TP\n\\fB" << roff(trimmed(text_beside ? l.substr(0, column) : l)) << "\\fR\n";
      if (text_beside) os << roff(trimmed(l.substr(column))) << "\n";
      open = true;
    } else if (open && !trimmed(l).empty()) {
      os << roff(trimmed(l)) << "\n";
    }
  }
}

}  // namespace

void print_man_page(std::ostream& os) {
  os << ".\\\" Made by `redlock --man` from its --help text: edit src/cli/help.cpp and the options, not this.\n"
     << ".TH REDLOCK 1 \"\" \"redlock " << redlock::version << "\" \"User Commands\"\n"
     << ".nh\n"  // no word broken at a line end: option and variable names are copied
     << ".SH NAME\nredlock \\- hold a RedLock (one lock over N independent Redis masters) from the shell\n"
     << ".SH SYNOPSIS\n";
  preformatted(os, synopsis);
  os << ".PP\n" << roff(connection_intro) << "\n.PP\n";
  preformatted(os, connection_synopsis);
  os << ".PP\n" << roff(durations_note) << "\n"
     << ".PP\n\\fBredlock \\fISUBCOMMAND\\fB \\-\\-help\\fR prints a subcommand's options, as listed below;\n"
     << "\\fBredlock \\-\\-version\\fR the version.\n"
     << ".SH OPTIONS\n";
  for (auto& sub : subcommands) options_section(os, help_of(sub));
  os << ".SH \"EXIT STATUS\"\n";
  for (auto& e : exit_statuses) os << ".TP\n\\fB" << roff(e.status) << "\\fR\n" << roff(e.meaning) << "\n";
}

}  // namespace redlock::cli
