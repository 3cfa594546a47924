-- Neovim as a real third-party LSP client: start Root Guard on a package folder,
-- add the repository root as a workspace folder, record what the server says.
-- Works with Neovim 0.7 (Debian bookworm) and later.
local out = assert(io.open(os.getenv("RG_OUT"), "a"))
local function log(line)
  out:write(line .. "\n")
  out:flush()
end

local narrow, repo, python = os.getenv("RG_NARROW"), os.getenv("RG_REPO"), os.getenv("RG_PYTHON")

local handlers = {
  ["window/showMessage"] = function(_, result)
    log("MESSAGE " .. result.type .. " " .. result.message:gsub("\n", " | "))
  end,
  ["rootguard/status"] = function(_, result)
    log("STATUS widened=" .. tostring(result.widened) .. " union=" .. table.concat(result.union, ","))
  end,
}

vim.cmd("edit " .. vim.fn.fnameescape(narrow .. "/package.json"))
local client_id = vim.lsp.start_client({
  name = "rootguard",
  cmd = { python, "-m", "lsp_bridge" },
  root_dir = narrow,
  workspace_folders = { { uri = vim.uri_from_fname(narrow), name = "checkout" } },
  handlers = handlers,
})
vim.lsp.buf_attach_client(0, client_id)

local ok = vim.wait(20000, function()
  local client = vim.lsp.get_client_by_id(client_id)
  return client ~= nil and client.initialized
end, 50)
log("INITIALIZED " .. tostring(ok))

vim.lsp.buf.add_workspace_folder(repo)
vim.wait(30000, function()
  local text = table.concat(vim.fn.readfile(os.getenv("RG_OUT")), "\n")
  return text:find("MESSAGE 2 ") ~= nil
end, 100)
vim.lsp.stop_client(client_id)
vim.cmd("qa!")
