// parasurf completion: a shell completion script written from the command line's own definitions, so that it
// always knows the subcommands, options and choices of this build.
#include <cstdio>
#include <regex>
#include <sstream>

#include "parasurf/commands.hpp"

namespace parasurf::cli {

namespace {

struct OptionInfo {
  std::vector<std::string> names;    // --long and -s forms
  std::vector<std::string> choices;  // values it takes, when it names them
  bool takes_value = false;
  bool number = false;  // a value with nothing to complete
};

struct CommandInfo {
  std::string path;  // "isosurface", "bench patches"
  std::string about;
  std::vector<OptionInfo> options;
  std::vector<std::string> subcommands;
  std::vector<std::string> positional_choices;  // e.g. solve's app
};

bool is_word(const std::string& w) { return std::regex_match(w, std::regex("[a-z0-9][a-z0-9.-]*")); }

// Choices an option names: a set validator's {a,b,c} in its type name, else a description that begins (or, after a
// colon, ends its first clause) with "a | b | c" as this program's help texts do.
std::vector<std::string> choices_of(const CLI::Option* o) {
  std::vector<std::string> out;
  const std::string type = o->get_type_name();
  const auto open = type.find('{'), close = type.find('}');
  if (open != std::string::npos && close != std::string::npos && close > open) {
    std::stringstream in(type.substr(open + 1, close - open - 1));
    for (std::string w; std::getline(in, w, ',');)
      if (is_word(w)) out.push_back(w);
    return out;
  }
  const std::string d = o->get_description();
  if (d.find(" | ") == std::string::npos) return out;
  std::vector<std::string> parts;
  std::size_t at = 0;
  for (std::size_t bar; (bar = d.find(" | ", at)) != std::string::npos; at = bar + 3)
    parts.push_back(d.substr(at, bar - at));
  parts.push_back(d.substr(at));
  if (const auto colon = parts[0].rfind(": "); colon != std::string::npos) parts[0] = parts[0].substr(colon + 2);
  for (const auto& p : parts) {
    const std::string w = p.substr(0, p.find(' '));
    if (!is_word(w)) return {};
    out.push_back(w);
  }
  return out;
}

void collect(const CLI::App* app, const std::string& path, std::vector<CommandInfo>& out) {
  CommandInfo c;
  c.path = path;
  c.about = app->get_description();
  for (const CLI::Option* o : app->get_options()) {
    if (o->get_positional()) {
      const auto ch = choices_of(o);
      if (!ch.empty() && c.positional_choices.empty()) c.positional_choices = ch;
      continue;
    }
    OptionInfo info;
    for (const auto& l : o->get_lnames()) info.names.push_back("--" + l);
    for (const auto& s : o->get_snames()) info.names.push_back("-" + s);
    if (info.names.empty() || o->get_group().empty()) continue;  // hidden (old names kept for scripts)
    info.takes_value = o->get_items_expected_max() > 0 && o->get_type_size_max() > 0;
    if (info.takes_value) info.choices = choices_of(o);
    const std::string type = o->get_type_name();
    info.number =
        type.starts_with("INT") || type.starts_with("UINT") || type.starts_with("FLOAT") || type.starts_with("NUMBER");
    c.options.push_back(std::move(info));
  }
  for (const CLI::App* sub : app->get_subcommands([](const CLI::App*) { return true; }))
    c.subcommands.push_back(sub->get_name());
  out.push_back(c);
  for (const CLI::App* sub : app->get_subcommands([](const CLI::App*) { return true; }))
    collect(sub, path.empty() ? sub->get_name() : path + " " + sub->get_name(), out);
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& w : v) s += (s.empty() ? "" : " ") + w;
  return s;
}

std::string bash_script(const std::vector<CommandInfo>& commands) {
  std::string s =
      "# bash completion for parasurf (written by `parasurf completion bash`)\n"
      "_parasurf() {\n"
      "  local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]} path=\"\" i w\n"
      "  # The command path: the leading words that name subcommands.\n"
      "  for ((i = 1; i < COMP_CWORD; i++)); do\n"
      "    w=${COMP_WORDS[i]}\n"
      "    case \"$path:$w\" in\n";
  for (const auto& c : commands)
    for (const auto& sub : c.subcommands)
      s += "      '" + c.path + ":" + sub + "') path=" + (c.path.empty() ? "" : "\"$path \"") + sub + " ;;\n";
  s += "      *) break ;;\n"
       "    esac\n"
       "  done\n"
       "  local subcommands=\"\" options=\"\" choices=\"\"\n"
       "  case \"$path\" in\n";
  for (const auto& c : commands) {
    s += "    '" + c.path + "')\n";
    s += "      case \"$prev\" in\n";
    for (const auto& o : c.options) {
      if (!o.takes_value) continue;
      std::string alts;
      for (const auto& n : o.names) alts += (alts.empty() ? "" : "|") + n;
      if (!o.choices.empty())
        s += "        " + alts + ") COMPREPLY=($(compgen -W '" + join(o.choices) + "' -- \"$cur\")); return ;;\n";
      else if (o.number)
        s += "        " + alts + ") COMPREPLY=(); return ;;\n";
      else
        s += "        " + alts + ") COMPREPLY=($(compgen -f -- \"$cur\")); return ;;\n";
    }
    s += "      esac\n";
    std::vector<std::string> names;
    for (const auto& o : c.options) names.insert(names.end(), o.names.begin(), o.names.end());
    s += "      subcommands='" + join(c.subcommands) + "' options='" + join(names) + "' choices='" +
         join(c.positional_choices) + "' ;;\n";
  }
  s += "  esac\n"
       "  if [[ $cur == -* ]]; then\n"
       "    COMPREPLY=($(compgen -W \"$options\" -- \"$cur\"))\n"
       "  elif [[ -n $subcommands ]]; then\n"
       "    COMPREPLY=($(compgen -W \"$subcommands\" -- \"$cur\"))\n"
       "  else\n"
       "    COMPREPLY=($(compgen -W \"$choices\" -- \"$cur\") $(compgen -f -- \"$cur\"))\n"
       "  fi\n"
       "}\n"
       "complete -o filenames -F _parasurf parasurf\n";
  return s;
}

std::string fish_script(const std::vector<CommandInfo>& commands) {
  std::string s =
      "# fish completion for parasurf (written by `parasurf completion fish`)\n"
      "complete -c parasurf -f\n";
  for (const auto& c : commands) {
    // fish's condition: the words seen name exactly this command path.
    std::string cond;
    if (c.path.empty()) {
      cond = "__fish_use_subcommand";
    } else {
      std::vector<std::string> parts;
      std::stringstream in(c.path);
      for (std::string w; in >> w;) parts.push_back(w);
      cond = "__fish_seen_subcommand_from " + parts.back();
      if (parts.size() > 1) cond = "__fish_seen_subcommand_from " + parts[0] + "; and " + cond;
    }
    for (const auto& sub : c.subcommands) s += "complete -c parasurf -n '" + cond + "' -a " + sub + "\n";
    for (const auto& o : c.options) {
      s += "complete -c parasurf -n '" + cond + "'";
      for (const auto& n : o.names) s += (n.starts_with("--") ? " -l " + n.substr(2) : " -s " + n.substr(1));
      if (o.takes_value) s += !o.choices.empty() ? " -x -a '" + join(o.choices) + "'" : o.number ? " -x" : " -r -F";
      s += "\n";
    }
    if (!c.positional_choices.empty())
      s += "complete -c parasurf -n '" + cond + "' -a '" + join(c.positional_choices) + "'\n";
    if (!c.path.empty() && c.subcommands.empty()) s += "complete -c parasurf -n '" + cond + "' -F\n";
  }
  return s;
}

}  // namespace

void add_completion(CLI::App& app) {
  auto shell = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand("completion",
                                 "Print a shell completion script: bash (source it, or put it in "
                                 "~/.local/share/bash-completion/completions/parasurf), zsh (the bash script through "
                                 "bashcompinit) or fish (~/.config/fish/completions/parasurf.fish)");
  cmd->add_option("shell", *shell, "bash | zsh | fish")->required()->check(CLI::IsMember({"bash", "zsh", "fish"}));
  cmd->callback([&app, shell] {
    std::vector<CommandInfo> commands;
    collect(&app, "", commands);
    std::string script;
    if (*shell == "fish")
      script = fish_script(commands);
    else if (*shell == "zsh")
      script = "autoload -U +X bashcompinit && bashcompinit\n" + bash_script(commands);
    else
      script = bash_script(commands);
    std::fwrite(script.data(), 1, script.size(), stdout);
  });
}

}  // namespace parasurf::cli
