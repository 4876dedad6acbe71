import { Router } from 'express';
import type { TenantDirectory } from '../../adapters/tenant-directory.js';
import { requireScope } from '../auth.js';
import { presentRecipe } from '../present.js';
import { json, needsKey, operationsOf } from '../openapi/describe.js';

export const operations = operationsOf('Signing', needsKey('read'), {
  listRecipes: {
    route: 'get /v1/recipes',
    summary: 'List the signing recipes your tenant may use',
    answers: [
      json(200, 'The recipes', { recipes: [{ recipe_id: 'photo-v1', media_types: ['image/jpeg', 'image/png'] }] }),
    ],
  },
});

export function recipeRoutes(deps: { tenants: TenantDirectory }): Router {
  const router = Router();
  router.get('/v1/recipes', requireScope('read'), async (req, res) => {
    const recipes = await deps.tenants.listRecipes(req.auth!.tenant.plan);
    res.json({ data: recipes.map((recipe) => ({ ...presentRecipe(recipe), available: recipe.available })) });
  });
  return router;
}
