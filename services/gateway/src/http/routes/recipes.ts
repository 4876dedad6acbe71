import { Router } from 'express';
import type { TenantDirectory } from '../../adapters/tenant-directory.js';
import { requireScope } from '../auth.js';
import { presentRecipe } from '../present.js';

export function recipeRoutes(deps: { tenants: TenantDirectory }): Router {
  const router = Router();
  router.get('/v1/recipes', requireScope('read'), async (req, res) => {
    const recipes = await deps.tenants.listRecipes(req.auth!.tenant.plan);
    res.json({ data: recipes.map((recipe) => ({ ...presentRecipe(recipe), available: recipe.available })) });
  });
  return router;
}
