-- Neovim as a real third-party LSP client: start Root Guard on a package folder,
-- add the repository root as a workspace folder (or start with both: RG_START_BOTH=1),
-- record what the person would see. Neovim's own handlers for window/showMessage and
-- window/showMessageRequest run unchanged; only the screen they write to is recorded.
-- Works with Neovim 0.7 (Debian bookworm) and later.
local out = assert(io.open(os.getenv("RG_OUT"), "a"))
local function log(line)
  out:write(line .. "\n")
  out:flush()
end

local narrow, repo, python = os.getenv("RG_NARROW"), os.getenv("RG_REPO"), os.getenv("RG_PYTHON")
local start_both = os.getenv("RG_START_BOTH") == "1"

-- The message area: what nvim_out_write, print and inputlist would put on screen.
vim.api.nvim_out_write = function(text)
  for line in text:gmatch("[^\n]+") do
    log("VISIBLE " .. line)
  end
end
print = function(...)
  log("VISIBLE " .. table.concat(vim.tbl_map(tostring, { ... }), " "))
end
local choices = {} -- RG_CHOICES="1,0": the person's answers to the first requests, in order
for number in (os.getenv("RG_CHOICES") or ""):gmatch("%d+") do
  table.insert(choices, tonumber(number))
end
vim.fn.inputlist = function(items)
  for _, item in ipairs(items) do
    for line in item:gmatch("[^\n]+") do
      log("VISIBLE " .. line)
    end
  end
  log("CHOICES shown")
  return table.remove(choices, 1) or 0 -- 0: the person pressed Enter, no action
end

local handlers = {
  ["rootguard/status"] = function(_, result)
    log("STATUS widened=" .. tostring(result.widened) .. " union=" .. table.concat(result.union, ",")
      .. " acknowledged=" .. tostring(result.acknowledged))
  end,
}

local folders = { { uri = vim.uri_from_fname(narrow), name = "checkout" } }
if start_both then
  table.insert(folders, { uri = vim.uri_from_fname(repo), name = "shop" })
end

vim.cmd("edit " .. vim.fn.fnameescape(narrow .. "/package.json"))
local client_id = vim.lsp.start_client({
  name = "rootguard",
  cmd = { python, "-m", "lsp_bridge" },
  root_dir = narrow,
  workspace_folders = folders,
  handlers = handlers,
})
vim.lsp.buf_attach_client(0, client_id)

local ok = vim.wait(20000, function()
  local client = vim.lsp.get_client_by_id(client_id)
  return client ~= nil and client.initialized
end, 50)
log("INITIALIZED " .. tostring(ok))

if not start_both then
  vim.lsp.buf.add_workspace_folder(repo)
end
vim.wait(30000, function()
  local text = table.concat(vim.fn.readfile(os.getenv("RG_OUT")), "\n")
  return text:find("Root Guard: ") ~= nil
end, 100)
if os.getenv("RG_WAIT_FOR") then -- e.g. the report, shown after "Show report"
  vim.wait(30000, function()
    local text = table.concat(vim.fn.readfile(os.getenv("RG_OUT")), "\n")
    return text:find(os.getenv("RG_WAIT_FOR"), 1, true) ~= nil
  end, 100)
end
vim.wait(300, function() return false end, 50)
vim.lsp.stop_client(client_id)
vim.cmd("qa!")
